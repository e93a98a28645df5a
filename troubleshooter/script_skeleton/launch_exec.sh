launch() {
  note "running: $*"
  exec "$@"
}

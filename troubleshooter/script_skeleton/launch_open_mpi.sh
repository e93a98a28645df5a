# Open MPI does not pass the environment to remote ranks by itself: insert -x for every setting,
# and pin both of its TCP channels (the runtime's out-of-band one and the MPI data one).
launch() {
  local -a flags
  case "$(basename -- "$1")" in
    mpirun|mpiexec|orterun|prterun) ;;
    *)
      note "this wrapper was made for mpirun; add these options to the mpirun line that $1 runs:"
      : @wrapped_flags@
      note "running: $*"
      exec "$@"
      ;;
  esac
  local version
  version=$("$1" --version 2>&1 || true)
  case "$version" in
    *PRRTE*|*"Open MPI) 5."*|*"Open MPI) v5."*|*"Open MPI) 6."*)
      # Open MPI 5 runs on PRRTE: the out-of-band interface is a --prtemca parameter.
      : @flags_open_mpi_5@
      ;;
    *"Open MPI"*)
      : @flags_open_mpi_4@
      ;;
    *)
      note "$1 is not Open MPI: -x and --mca are Open MPI options. Pass the exported variables with your MPI's own"
      note "option (MPICH and Intel MPI: -genvlist NAME,...) and pin its network interface as its documentation says."
      note "running: $*"
      exec "$@"
      ;;
  esac
  : @forward_renamed@
  local program=$1
  shift
  note "running: $program ${flags[*]} $*"
  exec "$program" "${flags[@]}" "$@"
}

"""Full-text search over cases. Whoosh stays behind this package so the backend can be replaced."""

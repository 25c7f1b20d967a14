"""Op-table entries, one file per ``minigrad/functional/<family>.py``; each defines ``OPS``."""

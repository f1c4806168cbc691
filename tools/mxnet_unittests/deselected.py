"""MXNet unit tests not run against mxkv, each with why: they test features
mxkv does not claim (docs/parity.md lists the same)."""
DESELECTED: dict[str, str] = {
}

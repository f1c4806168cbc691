"""The randomized differential suite: seeded KVStore call sequences replayed
on mxkv and compared with what MXNet 1.9.1 did (see docs/parity.md)."""

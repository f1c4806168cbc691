"""Parity scenarios run against both Apache MXNet 1.9.1 and mxkv (see docs/parity.md)."""

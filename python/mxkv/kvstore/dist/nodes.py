"""``mxkv cluster``: start the Ray nodes of a multi-host cluster, with a token.

::

    mxkv cluster head [--port 6379] [--node-ip-address IP] [--token-file PATH] [-- RAY_ARGS]
    mxkv cluster join HEAD:PORT [--node-ip-address IP] [--token-file PATH] [-- RAY_ARGS]

Both run ``ray start`` with Ray's token authentication on
(``RAY_AUTH_MODE=token``, ``RAY_AUTH_TOKEN_PATH``): ``head`` makes the token
file when it is missing (64 hex digits, mode 0600; an existing one must be
the user's own and unreadable by others), ``join`` needs a copy of it.
Copy it privately: whoever holds it can run code on every host as you.

The node's address is the one other hosts reach it by, never loopback:
``join`` takes the address of the interface the kernel routes to the head
through (:func:`route_address`); ``head`` takes the host's one non-loopback
IPv4 address, else the one its default route uses, else asks for
``--node-ip-address`` (Ray alone picks 127.0.0.1 on a host without a
default route, and tells the other hosts to join that).
"""
from __future__ import annotations

import argparse
import fcntl
import ipaddress
import os
import secrets
import shutil
import socket
import stat
import struct
import subprocess
import sys
from typing import Dict, List, Optional, Sequence

__all__ = ["main", "route_address", "interface_addresses", "token_environ"]

DEFAULT_TOKEN_FILE = "ray-token"
_SIOCGIFADDR = 0x8915


def interface_addresses() -> Dict[str, str]:
    """Every interface's IPv4 address (Linux), by interface name."""
    out = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(s.fileno(), _SIOCGIFADDR,
                                     struct.pack("256s", name[:15].encode()))
            except OSError:   # no IPv4 address
                continue
            out[name] = socket.inet_ntoa(packed[20:24])
    return out


def route_address(host: str, port: int = 6379) -> str:
    """The local address this host reaches ``host`` from (the kernel's route;
    nothing is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((socket.gethostbyname(host), port))
        return s.getsockname()[0]


def _head_address() -> str:
    addrs = sorted({a for a in interface_addresses().values()
                    if not ipaddress.ip_address(a).is_loopback})
    if len(addrs) == 1:
        return addrs[0]
    try:
        return route_address("192.0.2.1")   # (TEST-NET-1: the default route's interface)
    except OSError:
        pass
    raise SystemExit("mxkv cluster head: cannot tell which address other hosts reach this one "
                     f"by ({', '.join(addrs) or 'no address but loopback'}): give "
                     "--node-ip-address")


def token_environ(path: str, create: bool) -> Dict[str, str]:
    """The environment that turns Ray's token auth on with the token in
    ``path`` (made, mode 0600, when ``create`` and missing)."""
    path = os.path.abspath(path)
    if create and not os.path.exists(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise SystemExit(f"mxkv cluster: no token file {path}: copy the head's there "
                         "(privately)") from None
    if st.st_uid != os.getuid() or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SystemExit(f"mxkv cluster: refusing token file {path}: it must be yours and "
                         f"unreadable by others (mode {stat.S_IMODE(st.st_mode):04o}; "
                         "chmod 600 it)")
    return {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": path}


def _ray() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "ray")
    found = here if os.path.exists(here) else shutil.which("ray")
    if not found:
        raise SystemExit("mxkv cluster: no `ray` command: pip install 'mxkv[dist]'")
    return found


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Read ``mxkv cluster``'s command line."""
    p = argparse.ArgumentParser(prog="mxkv cluster",
                                description="Start a Ray node of a multi-host cluster "
                                "with token auth, on the address other hosts reach.")
    sub = p.add_subparsers(dest="what", required=True)
    head = sub.add_parser("head", help="start the head node")
    head.add_argument("--port", type=int, default=6379)
    join = sub.add_parser("join", help="join the head at ADDRESS (HOST:PORT)")
    join.add_argument("address")
    for q in (head, join):
        q.add_argument("--node-ip-address", default=None,
                       help="this node's address (default: see `mxkv cluster --help`)")
        q.add_argument("--token-file", default=DEFAULT_TOKEN_FILE,
                       help=f"the cluster's token (default ./{DEFAULT_TOKEN_FILE}; head makes "
                       "it when missing)")
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)   # more `ray start` options
    a = p.parse_args(argv[:cut])
    a.ray_args = argv[cut + 1:]
    return a


def command(a: argparse.Namespace) -> List[str]:
    """The ``ray start`` command line for ``a``."""
    if a.what == "head":
        ip = a.node_ip_address or _head_address()
        where = ["--head", "--port", str(a.port)]
    else:
        host, _, port = a.address.rpartition(":")
        if not host or not port.isdigit():
            raise SystemExit(f"mxkv cluster join: {a.address!r} is not HOST:PORT")
        ip = a.node_ip_address or route_address(host, int(port))
        where = ["--address", a.address]
    if ipaddress.ip_address(ip).is_loopback:
        raise SystemExit(f"mxkv cluster: {ip} is loopback, which other hosts cannot reach: "
                         "give --node-ip-address")
    return [_ray(), "start", *where, "--node-ip-address", ip, "--disable-usage-stats",
            *a.ray_args]


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of ``mxkv cluster``."""
    a = parse_args(sys.argv[1:] if argv is None else argv)
    env = token_environ(a.token_file, create=a.what == "head")
    cmd = command(a)
    code = subprocess.run(cmd, env={**os.environ, **env}).returncode
    if code == 0 and a.what == "head":
        ip = cmd[cmd.index("--node-ip-address") + 1]
        print(f"mxkv cluster: head at {ip}:{a.port}. On every other host, with "
              f"{a.token_file} copied there privately:\n"
              f"  mxkv cluster join {ip}:{a.port} --token-file {a.token_file}\n"
              f"Jobs: export RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH={env['RAY_AUTH_TOKEN_PATH']}"
              f"\n  mxkv launch --ray-address {ip}:{a.port} --launcher ray ...", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())

"""Where the Clojure side of mxkv is: a checkout or the installed package."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from .common import MissingDependency, env

#: The package's copy of the Clojure side (written by the wheel build).
PACKAGED = Path(__file__).resolve().parent.parent / "_clojure"
JAR_NAME = "mxkv.jar"


class Layout:
    """Where the namespaces, bridge classes and tutorial are.

    Attributes
    ----------
    kind : {'checkout', 'package'}
    root : Path
        The checkout, or the package's ``_clojure`` directory.
    """

    def __init__(self, kind: str, root: Path) -> None:
        self.kind = kind
        self.root = root

    @property
    def tutorial(self) -> Path:
        """The KVStore tutorial transcript (``kvstore.clj``)."""
        sub = ("clojure", "tutorial") if self.kind == "checkout" else ("tutorial",)
        return self.root.joinpath(*sub, "kvstore.clj")

    @property
    def tests(self) -> Optional[Path]:
        """The Clojure test suite (a checkout only)."""
        return self.root / "clojure" / "test" if self.kind == "checkout" else None

    @property
    def java_sources(self) -> Path:
        """The directory of the bridge's Java sources."""
        sub = ("clojure", "java") if self.kind == "checkout" else ("java",)
        return self.root.joinpath(*sub)

    def __repr__(self) -> str:
        return f"Layout({self.kind!r}, {str(self.root)!r})"


def _is_checkout(d: Path) -> bool:
    return (d / "deps.edn").is_file() and (d / "clojure" / "src").is_dir()


def layout() -> Layout:
    """The checkout this module belongs to (``MXKV_HOME`` overrides), else the package."""
    home = env("MXKV_HOME")
    if home:
        d = Path(home).resolve()
        if not _is_checkout(d):
            raise MissingDependency(f"MXKV_HOME={home} is not an mxkv checkout "
                                    "(no deps.edn and clojure/src there)")
        return Layout("checkout", d)
    for d in Path(__file__).resolve().parents:
        if _is_checkout(d):
            return Layout("checkout", d)
    if (PACKAGED / JAR_NAME).is_file() or (PACKAGED / "java").is_dir():
        return Layout("package", PACKAGED)
    raise MissingDependency("mxkv's Clojure side is missing: this installation has neither "
                            "mxkv/_clojure (a wheel built from the sources) nor a checkout; "
                            "reinstall mxkv, or set MXKV_HOME to a checkout")

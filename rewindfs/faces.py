"""Lazy package faces (PEP 562): a package's public names, each imported on first use.

A face lists what its package offers and where each name lives; importing the
package imports none of it (`rewind --version` must not pay for pygit2). A name is
either an attribute of one of the package's modules, or one of its modules offered
whole (its functions are the API: `sweep.plan`, `check.verify`), under its own name even
when it lives in a sub-package (`files.trees` is offered as `trees`).

    __all__, __getattr__, __dir__ = face(__name__, {"Layout": "rewindfs.store.objects.layout"},
                                         modules=("check", "damage"))

An exported name must never also be the name of one of the package's own modules
unless it is that module: importing the module would rebind the name on the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable

# package -> (its names and their modules, the modules it offers whole): for the
# layout tests, which follow a face's names as imports.
TABLES: dict[str, tuple[dict[str, str], frozenset[str]]] = {}


def face(package: str, names: dict[str, str], modules: Iterable[str] = ()
         ) -> tuple[list[str], Callable[[str], object], Callable[[], list[str]]]:
    """`__all__`, `__getattr__` and `__dir__` for `package`: `names` maps a public name
    to the module that defines it (`module:attr` when it is called otherwise there);
    `modules` are submodules of `package` offered whole (`sub.module`: offered as
    `module`)."""
    whole = {path.rpartition(".")[2]: path for path in modules}
    public = sorted({*names, *whole})
    TABLES[package] = (names, frozenset(whole.values()))

    def __getattr__(name: str) -> object:
        if name in whole:
            return importlib.import_module(f"{package}.{whole[name]}")
        source = names.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = source.partition(":")
        value = getattr(importlib.import_module(module), attr or name)
        setattr(sys.modules[package], name, value)  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*public, *vars(sys.modules[package])})

    return public, __getattr__, __dir__

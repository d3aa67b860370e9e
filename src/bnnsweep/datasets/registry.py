"""Name -> loader registry: metadata and split names are known without loading any data."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .base import Dataset, DatasetError, Split

SplitLoader = Callable[[], dict[str, Split]]

REQUIRED_METADATA = ("source", "licence", "preprocessing", "task", "error_measure")


@dataclass(frozen=True)
class Entry:
    """A registered dataset: its loader, static metadata and split names."""

    name: str
    loader: SplitLoader
    metadata: dict
    split_names: tuple[str, ...]

    def describe(self) -> dict:
        """A fresh copy of the metadata, plus ``name``, ``n_splits`` and ``split_names``."""
        info = copy.deepcopy(self.metadata)
        info.update(
            name=self.name, n_splits=len(self.split_names), split_names=list(self.split_names)
        )
        return info

    def load(self) -> Dataset:
        splits = self.loader()
        if tuple(splits) != self.split_names:
            raise DatasetError(
                f"dataset {self.name!r}: loader returned splits {list(splits)}, "
                f"registered {list(self.split_names)}"
            )
        return Dataset(name=self.name, splits=splits, metadata=self.describe())


_REGISTRY: dict[str, Entry] = {}


def register(
    name: str, *, metadata: dict, split_names: Sequence[str]
) -> Callable[[SplitLoader], SplitLoader]:
    """Decorator registering ``loader`` (no arguments, returns ``{split name: Split}``)."""
    missing = [key for key in REQUIRED_METADATA if key not in metadata]
    if missing:
        raise ValueError(f"dataset {name!r}: metadata lacks {missing}")

    def decorate(loader: SplitLoader) -> SplitLoader:
        if name in _REGISTRY:
            raise ValueError(f"dataset {name!r} registered twice")
        _REGISTRY[name] = Entry(name, loader, dict(metadata), tuple(split_names))
        return loader

    return decorate


def names() -> list[str]:
    """Registered dataset names, sorted."""
    return sorted(_REGISTRY)


def entry(name: str) -> Entry:
    """The :class:`Entry` for ``name``; unknown names raise listing the valid ones."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise DatasetError(f"unknown dataset {name!r}; valid names: {', '.join(names())}") from None

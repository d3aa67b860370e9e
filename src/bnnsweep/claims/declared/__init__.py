"""The claims, declared once each, one module per topic: importing this package imports every
module in it (so a new module is all it takes to add rows to ``bnnsweep claims``)."""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")

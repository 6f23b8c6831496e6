"""Imported last by the mutant table's forkserver (`forkrun.PRELOAD`): work every forked run
would otherwise redo, done once in the server.

- hypothesis scans every local module's source for constants on a process's first draw
  (about 0.4 s of CPU): done here for the modules preloaded, a child scans only its own.
- pytest collects the garbage at the end of each session, looking for unraisable exceptions
  (about 0.4 s over the preloaded heap): `gc.freeze()` moves what the server holds out of
  every collection, and spares the children copying pages the collector would touch.
"""

from __future__ import annotations

import gc

from hypothesis.internal.conjecture import providers

providers._get_local_constants()
gc.freeze()

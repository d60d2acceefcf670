"""A pytest plugin that tests/mutation.py loads into mutmut's runs (`-p tests.mutmut_workers`),
so that fsck's worker processes work under mutmut and its pool code is tested there.

Under mutmut the test process has more than one thread, so `store/fsck.verify` takes its
workers from a fork server. In mutmut's first, "stats", run every trampolined function records
its call, which reads mutmut's configuration; a fork server's workers never loaded it, and
mutmut would look for it in their working directory — the test's `tmp_path` (the autouse
fixture in conftest.py) once a test started the server: the first call in a worker raised, the
pool broke, and fsck's pool tests failed the run. So the fork server is started here, from the
scratch copy's `mutants/` directory, before any test changes directory, with this module
preloaded to load the configuration once. (Calls a worker records are lost with it: mutmut
attributes tests by the calls in the test process, which is what selects fsck's pool tests
for the mutants of its pool code.)"""

from __future__ import annotations

import multiprocessing
import os
from multiprocessing import forkserver

if os.environ.get("MUTANT_UNDER_TEST"):
    from mutmut import configuration

    if configuration._config is None:  # in the fork server, preloaded: not in mutmut
        here = os.getcwd()  # we started it from mutants/: the configuration is one level up
        os.chdir(os.path.dirname(here))
        try:
            configuration.config()
        finally:
            os.chdir(here)
    elif "forkserver" in multiprocessing.get_all_start_methods():  # in mutmut's test process
        multiprocessing.set_forkserver_preload([__name__])
        forkserver.ensure_running()

"""pytest plugin: lets accelerate's test helpers run on Python 3.11.

accelerate <= 0.16's `execute_subprocess_async` passes bare coroutines to
`asyncio.wait`, which Python 3.11 rejects ("Passing coroutines is
forbidden"), so every test that starts `accelerate launch` fails before it
launches anything. The replay setup loads this plugin (`-p asyncio_compat`)
to wrap such coroutines in tasks, as Python <= 3.10 did itself; nothing
else changes.
"""

import asyncio

_wait = asyncio.wait


async def _wait_accepting_coroutines(fs, *args, **kwargs):
    fs = [asyncio.ensure_future(f) if asyncio.iscoroutine(f) else f for f in fs]
    return await _wait(fs, *args, **kwargs)


asyncio.wait = _wait_accepting_coroutines

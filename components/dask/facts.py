"""The Dask components' name for ``components.settings.dask_facts``, where these upstream facts
live: the settings' checks read them, and settings import nothing from the layers above."""
from __future__ import annotations

from components.settings.dask_facts import *  # noqa: F403

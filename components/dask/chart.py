"""The Dask components' name for ``components.settings.dask_chart``, where these upstream facts
live: the settings' checks read them, and settings import nothing from the layers above."""
from __future__ import annotations

from components.settings.dask_chart import *  # noqa: F403

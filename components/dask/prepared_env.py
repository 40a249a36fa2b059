"""The Dask components' name for ``components.settings.prepared_env``, where these upstream facts
live: the settings' checks read them, and settings import nothing from the layers above."""
from __future__ import annotations

from components.settings.prepared_env import *  # noqa: F403

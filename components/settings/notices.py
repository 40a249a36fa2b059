"""What ``pulumi preview`` says of valid settings without refusing them, in one list: the
program logs each as a warning, and ``dask-tkg check`` prints the same list offline.

Out-of-support parts, a runner that cannot drive the image, an unverified vCenter, NVIDIA's
support matrix, images pinned by tag only, a team asking more GPUs than the stack has.
"""
from __future__ import annotations

from components.settings.charts import image_warnings
from components.settings.model import Settings
from components.settings.support import runner_image_notice, support_notice, support_warnings
from components.settings.team import team_warnings
from components.settings.trust import unverified_tls_warning


def preview_notices(s: Settings) -> list[str]:
    """Every warning the settings give at preview, in the order preview logs them."""
    said = (support_notice(s), runner_image_notice(s), unverified_tls_warning(s), *support_warnings(s),
            *image_warnings(s), *team_warnings(s))
    return [notice for notice in said if notice]

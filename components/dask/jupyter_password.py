"""A generated Jupyter password (never the chart's ``dask`` or the paper's ``rapidsai``) and
the hash the chart gets. The salt is generated once too, so the hash is stable and the
release does not change on every ``pulumi up``."""
from __future__ import annotations

import pulumi
import pulumi_random as random
from argon2.low_level import Type, hash_secret

# Jupyter server's own defaults for argon2 password hashes.
_TIME_COST, _MEMORY_COST, _PARALLELISM = 10, 10240, 8


def jupyter_hash(password: str, salt: str) -> str:
    """The ``argon2:...`` form Jupyter server's ``passwd_check`` accepts."""
    encoded = hash_secret(password.encode(), salt.encode(), time_cost=_TIME_COST, memory_cost=_MEMORY_COST,
                          parallelism=_PARALLELISM, hash_len=32, type=Type.ID)
    hashed: str = "argon2:" + encoded.decode()
    return hashed


class JupyterPassword(pulumi.ComponentResource):
    password: pulumi.Output[str]  # secret
    hash: pulumi.Output[str]  # secret

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dask-tkg:dask:JupyterPassword", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        password = random.RandomPassword(f"{name}-password", length=24, special=False, opts=child)
        salt = random.RandomString(f"{name}-salt", length=16, special=False, opts=child)
        self.password = pulumi.Output.secret(password.result)
        self.hash = pulumi.Output.secret(pulumi.Output.all(password.result, salt.result).apply(
            lambda a: jupyter_hash(a[0], a[1])))
        self.register_outputs({"password": self.password, "hash": self.hash})

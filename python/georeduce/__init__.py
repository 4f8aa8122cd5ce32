# SPDX-License-Identifier: BSD-3-Clause
"""georeduce: gradient AllReduce through georeduce gateways, from Python.

    import georeduce
    with georeduce.Client.from_table("gw-a.json", worker_id=11) as c:
        contributors = c.allreduce(grads)            # grads: the sum, in place
        fut = c.allreduce_async(grads2)              # a concurrent.futures.Future

For DistributedDataParallel, georeduce.torch has the communication hooks; for DiLoCo's
outer step (blocking or streaming), georeduce.diloco.
docs/PYTHON.md describes the package.
"""
from .client import (AllreduceTimeout, ArgumentError, CallTiming, Client, Config, ConfigError,
                     ConfigSource, ControlSource, GeoreduceError, TableFile, TableString,
                     Tree)
from .dtypes import DTYPES, DType
from .elastic import ElasticSource, torchrun_identity
from .job import Job, JobError

__version__ = "0.2.0"

__all__ = [
    "AllreduceTimeout", "ArgumentError", "CallTiming", "Client", "Config", "ConfigError",
    "ConfigSource", "ControlSource", "DTYPES", "DType", "ElasticSource", "GeoreduceError",
    "Job", "JobError", "TableFile", "TableString", "Tree", "torchrun_identity",
]

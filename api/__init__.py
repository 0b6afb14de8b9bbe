"""The REST service over a snowfire store.

GET  /healthz                            status, store, number of feature sets, limits
GET  /v1/featuresets                     one summary per set (?manifest=true: with manifests)
GET  /v1/featuresets/find?encoder=&task=&split=[&pair_encoding=]
GET  /v1/featuresets/{id}                summary + manifest
GET  /v1/featuresets/{id}/keys           example keys in order
POST /v1/featuresets/{id}/features       {"indices"|"keys": [...], "layers": [...]}
     Accept: application/x-safetensors (default) | application/json (small requests)

With a data directory (`snowfire serve --home DIR`, SNOWFIRE_HOME), jobs too (job_routes.py):
POST /v1/jobs                            {"kind": "extract"|"train"|"finetune"|"compare"|"layers",
                                          "params": {...}}
GET  /v1/jobs, /v1/jobs/{id}             status, progress, log tail, metrics when done
POST /v1/jobs/{id}/cancel
GET  /v1/featuresets/{id}/layers?task=   which layer? a layer sweep: the cached answer, or
                                         202 and the layers job computing it (layers_routes.py)
run by `snowfire worker --kind K --home DIR` from the SQLite queue (the `jobs` package).
"""

from snowfire.options import lazy_exports

#: name -> where it loads from on first use: the CLI reads the settings' fields without
#: loading fastapi
_WHERE = {
    "ENV_ONLY": ".settings:ENV_ONLY",
    "Settings": ".settings:Settings",
    "create_app": ".app:create_app",
    "serve": ".app:serve",
}

__all__ = ["ENV_ONLY", "Settings", "create_app", "serve"]

__getattr__ = lazy_exports(__name__, _WHERE)

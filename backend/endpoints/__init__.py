"""Model endpoints: several OpenAI-compatible servers at once, their models, and clients.

* ``endpoint``   what an endpoint is, its checks, and the environment's endpoints (pure)
* ``store``      SQL of ``<data_dir>/settings.sqlite`` (endpoints an admin added)
* ``catalogue``  ``GET /models`` per endpoint, cached briefly, fail-soft
* ``service``    ``ModelEndpoints``: what the UI and the runtime call (see its docstring)
"""

from backend.data_folder import SETTINGS_FILE
from backend.endpoints.catalogue import (
    CATALOGUE_TTL_S,
    FAILURE_TTL_S,
    LIST_TIMEOUT_S,
    EndpointListing,
    ModelCatalogue,
)
from backend.endpoints.endpoint import (
    ENDPOINTS_SETTING,
    MAX_ALLOWED_MODELS,
    Endpoint,
    EndpointView,
    checked_endpoint,
    env_endpoints,
)
from backend.endpoints.service import ModelChoice, ModelEndpoints, choice_label

__all__ = [
    "CATALOGUE_TTL_S",
    "ENDPOINTS_SETTING",
    "FAILURE_TTL_S",
    "LIST_TIMEOUT_S",
    "MAX_ALLOWED_MODELS",
    "SETTINGS_FILE",
    "Endpoint",
    "EndpointListing",
    "EndpointView",
    "ModelCatalogue",
    "ModelChoice",
    "ModelEndpoints",
    "checked_endpoint",
    "choice_label",
    "env_endpoints",
]

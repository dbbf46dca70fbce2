import backend.endpoints
from tests.support.exports import assert_public_surface


def test_the_public_surface_is_pinned_and_sorted():
    assert_public_surface(
        backend.endpoints,
        {
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
        },
    )

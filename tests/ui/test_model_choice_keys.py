"""The model picker's option values: one string per model, read back to the same model."""

import pytest

from backend.models import OFFLINE_REF, ModelRef
from chatsapp.states.models import AUTO_KEY, model_key, model_ref


class TestPickerValues:
    @pytest.mark.parametrize(
        "ref",
        [
            ModelRef("default", "fake-model"),
            ModelRef("lab", "meta/llama-3:70b-instruct"),
            OFFLINE_REF,
        ],
    )
    def test_a_model_reads_back_from_its_picker_value(self, ref):
        assert model_ref(model_key(ref)) == ref

    def test_no_choice_of_the_chat_is_the_auto_value(self):
        assert model_key(None) == AUTO_KEY
        assert model_ref(AUTO_KEY) is None

    @pytest.mark.parametrize("value", ["", "no-separator", ":model-without-endpoint"])
    def test_a_malformed_value_is_refused(self, value):
        with pytest.raises(ValueError, match="not a model choice"):
            model_ref(value)

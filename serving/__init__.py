"""Predictions of saved runs for texts sent now, many tasks over one encoder: ❄️ heads read
the features the encoder computes once per text (or the store already holds), adapter, LoRA
and BitFit runs switch onto one shared encoder, 🔥 runs bring their own model.
`POST /v1/predict` (api/predict_routes.py) and `snowfire.Predictor` are its two callers.

    registry = RunRegistry(HOME / "runs")              # runs by name (their path under it)
    predictor = Predictor(registry, store, embed_worker)
    answer = predictor.predict(["sst2-linear", "stsb-lora"], texts=[...])
    answer.runs[0].predictions[0]   # {"label": "1", "probabilities": {"0": 0.1, "1": 0.9}}
"""

_WHERE = {
    "InputFormError": "errors",
    "PredictBusyError": "errors",
    "PredictTimeoutError": "errors",
    "RunEncoderError": "errors",
    "RunNotFoundError": "errors",
    "RunNotReadyError": "errors",
    "ServingError": "errors",
    "FORMS": "predictor",
    "Observer": "predictor",
    "PredictAnswer": "predictor",
    "Predictor": "predictor",
    "RunAnswer": "predictor",
    "RunInfo": "registry",
    "RunRegistry": "registry",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str):
    # names load on first use: the API's error table imports the errors without torch
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

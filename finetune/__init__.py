"""🔥 fine-tuning baselines (Peters, Ruder & Smith 2019): the whole encoder trains with a
minimal output layer, scored with the same data and metrics as the ❄️ heads.

    cfg = FinetuneConfig(encoder="minilm", task="stsb", data="data/", out="runs/stsb-ft")
    metrics = train(cfg)          # writes RUN/{config,metrics}.json, log.jsonl, predictions/,
                                  # encoder/ (extractable: hf:RUN/encoder | elmo:RUN/encoder)

The models (`BertFinetuner`, `ElmoFinetuner`) implement one contract, `FireModel`
(finetune/base.py): collate, forward, predict, layer groups, refresh/trained state, save.
Re-running the same config on the same RUN resumes from RUN/checkpoint.pt. Reads `tasks/` for
data and metrics, and the pretrained weights through `extractor`.
Dimension glossary: B batch, L layers, T words, S subword pieces, D hidden size, K tags/classes.
"""

_WHERE = {
    "FireModel": "base",
    "BertFinetuner": "bert",
    "save_bilm": "bilm_file",
    "tf_arrays": "bilm_file",
    "FinetuneConfig": "config",
    "ElmoFinetuner": "elmo",
    "build_model": "model",
    "epoch_batches": "model",
    "to_device": "model",
    "predict": "model",
    "load_run": "predict",
    "predict_run_texts": "predict",
    "Adapter": "methods",
    "insert_adapters": "methods",
    "l2sp_penalty": "methods",
    "trained_by": "methods",
    "group_rates": "optim",
    "lr_multiplier": "optim",
    "param_groups": "optim",
    "trainable_depth": "optim",
    "unfreeze": "optim",
    "OutputLayer": "output",
    "TagScores": "output",
    "RECIPES": "recipe",
    "SCHEDULES": "recipe",
    "Recipe": "recipe",
    "RecipeSettings": "recipe",
    "build_optimizer": "trainer",
    "train": "trainer",
}

__all__ = [
    "RECIPES",
    "Adapter",
    "insert_adapters",
    "l2sp_penalty",
    "load_run",
    "predict_run_texts",
    "trained_by",
    "SCHEDULES",
    "RecipeSettings",
    "BertFinetuner",
    "ElmoFinetuner",
    "FinetuneConfig",
    "FireModel",
    "OutputLayer",
    "Recipe",
    "TagScores",
    "build_optimizer",
    "build_model",
    "epoch_batches",
    "to_device",
    "group_rates",
    "lr_multiplier",
    "param_groups",
    "predict",
    "save_bilm",
    "tf_arrays",
    "train",
    "trainable_depth",
    "unfreeze",
]


def __getattr__(name: str):
    # names load on first use: the config (the CLI, job params) loads no torch
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

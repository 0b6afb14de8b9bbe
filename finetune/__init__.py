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

from snowfire.options import lazy_exports

#: name -> where it loads from on first use: the config (the CLI, job params) loads no torch
_WHERE = {
    "FireModel": ".base:FireModel",
    "BertFinetuner": ".bert:BertFinetuner",
    "save_bilm": ".bilm_file:save_bilm",
    "tf_arrays": ".bilm_file:tf_arrays",
    "FinetuneConfig": ".config:FinetuneConfig",
    "ElmoFinetuner": ".elmo:ElmoFinetuner",
    "build_model": ".model:build_model",
    "epoch_batches": "snowfire.tasks:epoch_batches",  # ❄️ and 🔥 alike
    "to_device": ".model:to_device",
    "predict": ".model:predict",
    "load_run": ".predict:load_run",
    "predict_run_texts": ".predict:predict_run_texts",
    "Adapter": ".methods:Adapter",
    "insert_adapters": ".methods:insert_adapters",
    "l2sp_penalty": ".methods:l2sp_penalty",
    "trained_by": ".methods:trained_by",
    "group_rates": ".optim:group_rates",
    "lr_multiplier": ".optim:lr_multiplier",
    "param_groups": ".optim:param_groups",
    "trainable_depth": ".optim:trainable_depth",
    "unfreeze": ".optim:unfreeze",
    "OutputLayer": ".output:OutputLayer",
    "TagScores": ".output:TagScores",
    "RECIPES": ".recipe:RECIPES",
    "SCHEDULES": ".recipe:SCHEDULES",
    "Recipe": ".recipe:Recipe",
    "RecipeSettings": ".recipe:RecipeSettings",
    "build_optimizer": ".optim:build_optimizer",
    "train": ".trainer:train",
    "predict_outputs": ".model:predict_outputs",
    "saved_start": ".model:saved_start",
    "encoder_sha256": ".model:encoder_sha256",
    "probe_sha256": ".model:probe_sha256",
    "read_run": ".predict:read_run",
    "IDENTITY_KEYS": ".predict:IDENTITY_KEYS",
    "PREDICT_BATCH": ".predict:PREDICT_BATCH",
    "SHARED_METHODS": ".shared:SHARED_METHODS",
    "SharedEncoder": ".shared:SharedEncoder",
    "Slot": ".shared:Slot",
    "load_shared_run": ".shared:load_shared_run",
}

__all__ = [
    "IDENTITY_KEYS",
    "PREDICT_BATCH",
    "RECIPES",
    "SHARED_METHODS",
    "SharedEncoder",
    "Slot",
    "load_shared_run",
    "read_run",
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
    "predict_outputs",
    "saved_start",
    "encoder_sha256",
    "probe_sha256",
    "save_bilm",
    "tf_arrays",
    "train",
    "trainable_depth",
    "unfreeze",
]


__getattr__ = lazy_exports(__name__, _WHERE)

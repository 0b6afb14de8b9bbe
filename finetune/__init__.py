"""🔥 fine-tuning baselines (Peters, Ruder & Smith 2019): the whole encoder trains with a
minimal output layer, scored with the same data and metrics as the ❄️ heads.

    cfg = FinetuneConfig(encoder="minilm", task="stsb", data="data/", out="runs/stsb-ft")
    metrics = train(cfg)          # writes RUN/{config,metrics}.json, log.jsonl, predictions/,
                                  # encoder/ (extractable: hf:RUN/encoder | elmo:RUN/encoder)

Re-running the same config on the same RUN resumes from RUN/checkpoint.pt. Reads `tasks/` for
data and metrics, and the pretrained weights through `extractor`.
Dimension glossary: B batch, L layers, T words, S subword pieces, D hidden size, K tags/classes.
"""

from .bert import BertFinetuner
from .bilm_file import save_bilm, tf_arrays
from .config import FinetuneConfig, add_arguments, from_args
from .elmo import ElmoFinetuner
from .model import build_model, predict
from .optim import group_rates, lr_multiplier, param_groups, trainable_depth, unfreeze
from .output import OutputLayer, TagScores
from .recipe import RECIPES, SCHEDULES, Recipe
from .rundir import read_predictions
from .train import build_optimizer, train

__all__ = [
    "RECIPES",
    "SCHEDULES",
    "BertFinetuner",
    "ElmoFinetuner",
    "FinetuneConfig",
    "OutputLayer",
    "Recipe",
    "TagScores",
    "add_arguments",
    "build_optimizer",
    "build_model",
    "from_args",
    "group_rates",
    "lr_multiplier",
    "param_groups",
    "predict",
    "read_predictions",
    "save_bilm",
    "tf_arrays",
    "train",
    "trainable_depth",
    "unfreeze",
]

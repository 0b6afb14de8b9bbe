"""🔥 BERT-family fine-tuning (Devlin et al. 2019, as in Peters, Ruder & Smith 2019, sec. 3):
the whole encoder trains, with one output layer on top.

    h = Encoder([CLS] a [SEP] (b [SEP]))                      last hidden states (B, S, D)
    classification, pairs:  z = softmax(W dropout(h_[CLS]) + b)   pairs are encoded jointly
    regression (STS-B, SICK-R):  y = w . dropout(h_[CLS]) + b,  squared error
    NER:  e_t = W dropout(h_{first piece of word t}) + b,  per-word softmax

`h_[CLS]` is the last layer's state at [CLS] itself, not the pretrained pooler (tanh dense
layer, absent from some checkpoints); the pooler is kept unchanged in the saved encoder.
Words are aligned to pieces with the fast tokenizer's `word_ids`, exactly as
`extractor.hf.HFEncoder` tokenises (`is_split_into_words`), so the saved encoder extracts the
features this model computed.

Long inputs are truncated to `max_length` pieces (pairs: the longer text loses pieces first),
which is the usual recipe for fine-tuning and differs from the extractor's overlapping windows.
For NER a word whose first piece is cut off gets no loss and is predicted "O"; with
max_length 128, 0.1% of CoNLL-2003 sentences are that long (use 256 to avoid it).

Shapes: B batch, S pieces, T words, D hidden size, K classes / tags.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from snowfire.tasks import encode_targets, label_indices

from .base import FireModel
from .methods import insert_adapters, insert_lora, trained_by
from .optim import LayerGroup
from .output import IGNORE_INDEX, OutputLayer, TagScores

_LAYER = re.compile(r"(?:^|\.)(?:layer|layers)\.(\d+)\.")  # encoder.layer.N. in BERT/RoBERTa


class BertFinetuner(FireModel):
    """A Hugging Face encoder + `OutputLayer`; `collate` tokenises `tasks.Example`s."""

    def __init__(
        self,
        model_dir: str | Path,
        *,
        kind: str,
        num_labels: int,
        labels: Sequence[str] | None = None,
        dropout: float = 0.1,
        max_length: int = 128,
        crf: bool = False,
        lstm: int = 0,
        method: str = "full",
        adapter_size: int = 64,
        lora_rank: int = 8,
        lora_alpha: float = 8.0,
        lora_targets: str = "attention",
    ) -> None:
        """model_dir: a HF folder (or hub name); labels: class names or tags (index order),
        None for regression; max_length: pieces per input, capped at the model's limit;
        method: what trains besides the output layer (finetune/methods.py), with the
        adapters' bottleneck width and LoRA's rank and alpha."""
        super().__init__()
        from transformers import AutoConfig, AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        config = AutoConfig.from_pretrained(model_dir)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir, add_prefix_space=True)
        if not self.tokenizer.is_fast:
            raise ValueError(f"{model_dir}: a fast tokenizer is needed for word alignment")
        self.encoder = AutoModel.from_pretrained(model_dir, dtype=torch.float32)
        limit = getattr(config, "max_position_embeddings", 512)
        if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert"):
            limit -= 2  # position ids start after the padding index
        self.max_length = min(max_length, limit)
        self.kind = kind
        self.uses_types = getattr(config, "type_vocab_size", 0) > 1
        self.num_layers = config.num_hidden_layers + 1  # L, embeddings included
        tags = list(labels or ())
        pad_tag = tags.index("O") if kind == "tagging" and "O" in tags else 0
        tagging = kind == "tagging"
        self.output = OutputLayer(
            config.hidden_size,
            kind,
            num_labels,
            dropout=dropout,
            crf=crf and tagging,
            lstm=lstm if tagging else 0,
            pad_tag=pad_tag,
        )
        self.labels = list(labels or ())  # class names or tags, in index order
        self.method = method
        self.adapters = None
        if method == "adapter":
            self.adapters = insert_adapters(self.encoder, adapter_size)
        elif method == "lora":
            insert_lora(self.encoder, lora_rank, lora_alpha, lora_targets)

    # ------------------------------------------------------------------ data
    def collate(self, examples: Sequence[Any]) -> dict[str, torch.Tensor]:
        """Tokenise a list of `tasks.Example` into padded tensors (labels when all have one)."""
        words_a = [list(e.words_a) for e in examples]
        words_b = [list(e.words_b) for e in examples] if examples[0].words_b is not None else None
        enc = self.tokenizer(
            words_a,
            words_b,
            is_split_into_words=True,
            truncation=True,
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        batch = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}  # (B, S)
        if self.uses_types and "token_type_ids" in enc:
            batch["token_type_ids"] = enc["token_type_ids"]  # (B, S)
        if self.kind == "tagging":
            batch.update(self._align(enc, examples))
        elif (targets := encode_targets(self.kind, self.labels, examples)) is not None:
            batch["labels"] = torch.from_numpy(targets)  # (B,): ❄️'s class indices, or scores
        return batch

    def _align(self, enc, examples) -> dict[str, torch.Tensor]:
        """First piece of every word (word_ids of the fast tokenizer) and the gold tags."""
        n_words = max(len(e.words_a) for e in examples)
        first = torch.zeros(len(examples), n_words, dtype=torch.long)  # (B, T)
        mask = torch.zeros(len(examples), n_words, dtype=torch.bool)  # (B, T)
        for b in range(len(examples)):
            for s, w in enumerate(enc.word_ids(b)):
                if w is not None and not mask[b, w]:
                    first[b, w], mask[b, w] = s, True
        out = {
            "first_piece": first,
            "word_mask": mask,
            "num_words": torch.tensor([len(e.words_a) for e in examples]),  # (B,)
        }
        if all(e.tags is not None for e in examples):
            tags = torch.full((len(examples), n_words), IGNORE_INDEX)  # (B, T)
            for b, e in enumerate(examples):
                tags[b, : len(e.tags)] = torch.from_numpy(label_indices(self.labels, e.tags))
            out["labels"] = tags.masked_fill(~mask, IGNORE_INDEX)  # (B, T)
        return out

    # ------------------------------------------------------------------ model
    def forward(
        self, batch: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor | TagScores, torch.Tensor | None]:
        inputs = {
            k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch
        }
        h = self.encoder(**inputs).last_hidden_state  # (B, S, D)
        labels = batch.get("labels")
        if self.kind != "tagging":
            return self.output(h[:, 0], labels)  # [CLS]: (B, D) -> (B, K) | (B,)
        index = batch["first_piece"].unsqueeze(-1).expand(-1, -1, h.shape[-1])  # (B, T, D)
        x = torch.gather(h, 1, index)  # (B, T, D)
        return self.output(x, labels, mask=batch["word_mask"], lengths=batch["num_words"])

    @property
    def pretrained(self) -> nn.Module:
        return self.encoder

    def layer_groups(self) -> list[LayerGroup]:
        """Top-down: output layer, encoder layer N-1, ..., layer 0, embeddings: the parameters
        the method trains (finetune/methods.py), each layer's adapters with its layer.

        Parameters outside the numbered layers and the embeddings (e.g. a final norm) join the
        top layer; the pooler and every weight the method does not train are frozen here (in
        no group).
        """
        groups = self._groups()
        trained = {id(p) for _, params in groups for p in params}
        for p in self.encoder.parameters():
            if id(p) not in trained:
                p.requires_grad_(False)
        return groups

    def _groups(self) -> list[LayerGroup]:
        """layer_groups without freezing anything: what the method trains, grouped."""
        layers: dict[int, list[nn.Parameter]] = {}
        embeddings, extra = [], []
        for name, p in self.encoder.named_parameters():
            if name.startswith("pooler.") or not trained_by(self.method, name):
                continue
            if m := _LAYER.search(name):
                layers.setdefault(int(m.group(1)), []).append(p)
            elif "embeddings" in name:
                embeddings.append(p)
            else:
                extra.append(p)
        for key, adapter in (self.adapters or {}).items():  # "layer3_ffn"
            layers.setdefault(int(key[5:].split("_")[0]), []).extend(adapter.parameters())
        top = max(layers) if layers else None
        groups: list[LayerGroup] = [("output", list(self.output.parameters()))]
        for i in sorted(layers, reverse=True):
            groups.append((f"layer{i}", layers[i] + (extra if i == top else [])))
        if embeddings or (extra and top is None):
            groups.append(("embeddings", embeddings + (extra if top is None else [])))
        return groups

    def trained_state(self) -> dict[str, torch.Tensor]:
        """What a run of a partial method keeps: the tensors it trained, by state-dict name
        (the rest is the pretrained encoder, rebuilt from its identity); full: everything."""
        state = self.state_dict()
        if self.method == "full":
            return state
        names = {id(p) for _, params in self._groups() for p in params}
        return {n: p.detach() for n, p in self.named_parameters() if id(p) in names} | {
            n: b for n, b in self.named_buffers() if n.startswith("output.")
        }

    # ------------------------------------------------------------------ artifacts
    def save_encoder(self, folder: str | Path) -> None:
        """The fine-tuned encoder as a HF folder: `extractor.load_encoder("hf:FOLDER")`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.encoder.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)

"""MT-DNN's multitask classifier (Liu et al. 2019; CALUM §6): one encoder shared by every task and one
classification head per task, each example routed to its own task's head by its ``task_id``.

The pooled vector is the first token's last hidden state (encoders), or the last non-padding token's
(decoder-only models such as GPT-2, whose first token has seen nothing else). A head is dropout → dense →
tanh → dropout → projection, the classification head of RoBERTa and ELECTRA. The logits of a batch have one
column per class of the widest task; a task with fewer classes fills the rest with ``MASKED_LOGIT``, so its
softmax, loss and argmax stay within its own classes and batches may mix tasks.
"""

from __future__ import annotations

import torch
from transformers.modeling_outputs import SequenceClassifierOutput

MASKED_LOGIT = -1e4
"""The logit of a class the example's task does not have (exp underflows to 0 in every dtype)."""


class TaskHead(torch.nn.Module):
    def __init__(self, width: int, n_labels: int, dropout: float):
        super().__init__()
        self.dropout = torch.nn.Dropout(dropout)
        self.dense = torch.nn.Linear(width, width)
        self.out = torch.nn.Linear(width, n_labels)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.out(self.dropout(torch.tanh(self.dense(self.dropout(pooled)))))


class MultitaskClassifier(torch.nn.Module):
    """``encoder``: an ``AutoModel`` (no head); ``tasks``: task name -> its label names, in head order."""

    def __init__(self, encoder: torch.nn.Module, tasks: dict[str, list[str]], *, pool_last: bool):
        super().__init__()
        config = encoder.config
        self.encoder, self.tasks, self.pool_last = encoder, dict(tasks), pool_last
        dropout = getattr(config, "hidden_dropout_prob", getattr(config, "resid_pdrop", 0.1))
        self.heads = torch.nn.ModuleList(TaskHead(config.hidden_size, len(labels), dropout)
                                         for labels in self.tasks.values())
        for head in self.heads:   # the encoder's own initialisation (BERT: N(0, 0.02))
            for layer in (head.dense, head.out):
                torch.nn.init.normal_(layer.weight, std=getattr(config, "initializer_range", 0.02))
                torch.nn.init.zeros_(layer.bias)
        self.width = max(len(labels) for labels in self.tasks.values())

    def forward(self, input_ids, attention_mask, task_id, token_type_ids=None, labels=None):
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **extra).last_hidden_state
        if self.pool_last:   # right padding: the last attended position
            last = attention_mask.sum(dim=1) - 1
            pooled = hidden[torch.arange(hidden.shape[0], device=hidden.device), last]
        else:
            pooled = hidden[:, 0]
        logits = pooled.new_full((pooled.shape[0], self.width), MASKED_LOGIT, dtype=torch.float32)
        for t in task_id.unique().tolist():
            rows = task_id == t
            head = self.heads[t](pooled[rows])
            logits[rows, :head.shape[1]] = head.float()
        loss = torch.nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)


class OwnHeadsClassifier(torch.nn.Module):
    """The original code's multitask model (DSincerity/CALM ``multitask-transformers/model.py`` lines 27-43; params
    ``calum_eval.multitask_heads: own``): every task the checkpoint's own sequence classifier
    (``AutoModelForSequenceClassification``: RoBERTa's dense-tanh head, ELECTRA's dense-GELU one, GPT-2's bias-free
    ``score`` on the last token, a BERT's pretrained pooler then a linear layer), the first task's encoder shared
    by the others as the original's ``setattr`` shares it. ``classifiers``: task name -> its classifier, in
    ``tasks``' order. The shared encoder is registered once (``encoder``), so the state dict holds it once; each
    task's rows run through its own classifier, the logits padded as :class:`MultitaskClassifier`'s."""

    def __init__(self, classifiers: dict[str, torch.nn.Module], tasks: dict[str, list[str]]):
        super().__init__()
        models = list(classifiers.values())
        self.prefix = prefix = models[0].base_model_prefix
        self.encoder = getattr(models[0], prefix)
        for model in models:
            if model.base_model_prefix != prefix:
                raise ValueError("the tasks' classifiers are of different architectures")
            del model._modules[prefix]                     # registered once, as `encoder`
            object.__setattr__(model, prefix, self.encoder)   # what the classifier's forward reads
        self.classifiers = torch.nn.ModuleList(models)
        self.tasks = dict(tasks)
        self.width = max(len(labels) for labels in self.tasks.values())

    def forward(self, input_ids, attention_mask, task_id, token_type_ids=None, labels=None):
        logits = torch.full((input_ids.shape[0], self.width), MASKED_LOGIT, dtype=torch.float32,
                            device=input_ids.device)
        for t in task_id.unique().tolist():
            rows = task_id == t
            extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids[rows]}
            # bound anew: a DataParallel replica copies the classifier's attributes, its own encoder is this one
            object.__setattr__(self.classifiers[t], self.prefix, self.encoder)
            out = self.classifiers[t](input_ids=input_ids[rows], attention_mask=attention_mask[rows], **extra).logits
            logits[rows, :out.shape[1]] = out.float()
        loss = torch.nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return SequenceClassifierOutput(loss=loss, logits=logits)

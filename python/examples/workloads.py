# SPDX-License-Identifier: MIT
"""workloads.py - the two training jobs of ddp_bench.py, each with its
data, its model, the batches a rank draws and how the model is scored.

  digits  a small CNN on scikit-learn's digits (python3-sklearn): 8x8
          images, 10 classes; scored by test accuracy
  lm      a word-level LSTM language model on the fortune cookies of
          Debian's fortunes package (/usr/share/games/fortunes, about
          2.5 MB of English quotations, jokes and verse); scored by
          validation loss (mean cross-entropy per word, nats) and
          perplexity. It reads 16,384 words and predicts the 2,048
          commonest: its embedding is most of its parameters and its
          gradient is sparse (a rank's batch touches at most 384 of its
          16,384 rows), where sparse codecs gain

Both are deterministic: the split, the vocabulary and the initial weights
are the same on every rank and in every run, and rank r draws its batches
from a generator seeded with 1000 + r.
"""
import math
import os
import re
from collections import Counter

FORTUNES = "/usr/share/games/fortunes"
# Pictures, not prose: their punctuation would crowd the vocabulary.
FORTUNES_SKIP = {"ascii-art"}
LM_WORDS = 16384        # words read: <unk>, <eos>, the 16,382 commonest
LM_VOCAB = 2048         # words predicted: the first 2,048 of those
LM_EMBED = 64
LM_HIDDEN = 64
LM_SEQ = 24             # words per training and validation window
LM_VAL_EVERY = 32       # every 32nd fortune is validation text
WORD = re.compile(r"[a-z0-9']+|[^\sa-z0-9']")


class Digits:
    """A small CNN on the digits: 1,437 training and 360 test images."""
    name = "digits"
    score = "accuracy"
    lr = 0.05
    default_batch = 32

    def __init__(self, torch):
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
        self.torch = torch
        digits = load_digits()
        x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
        y = torch.tensor(digits.target)
        self.xtr, self.xte, self.ytr, self.yte = train_test_split(
            x, y, test_size=0.2, random_state=0, stratify=y)
        self.train_size = len(self.xtr)
        self.test_size = len(self.xte)

    def build(self):
        nn = self.torch.nn
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 4 * 4, 256), nn.ReLU(),
            nn.Linear(256, 10))

    def batch(self, gen, size):
        idx = self.torch.randint(0, self.train_size, (size,), generator=gen)
        return self.xtr[idx], self.ytr[idx]

    def loss(self, model, batch):
        x, y = batch
        return self.torch.nn.functional.cross_entropy(model(x), y)

    def evaluate(self, net):
        """{"accuracy": fraction of the test images classified right}."""
        with self.torch.no_grad():
            acc = (net(self.xte).argmax(1) == self.yte).float().mean().item()
        return {"accuracy": acc}

    def sizes(self):
        return {"train_images": self.train_size,
                "test_images": self.test_size}

    def describe(self, params, batch):
        return ("CNN, %d parameters (%d bytes of float32 gradient); digits, "
                "%d train / %d test images, batch %d per rank"
                % (params, params * 4, self.train_size, self.test_size, batch))


def fortunes_files(root=FORTUNES):
    """The fortune files, in name order: plain files, no index (.dat) and
    no links (the .u8 names)."""
    if not os.path.isdir(root):
        raise FileNotFoundError(
            "%s is missing: the lm workload reads Debian's fortunes package "
            "(apt-get install fortunes)" % root)
    names = sorted(n for n in os.listdir(root)
                   if not n.endswith(".dat") and n not in FORTUNES_SKIP)
    paths = [os.path.join(root, n) for n in names]
    paths = [p for p in paths if os.path.isfile(p) and not os.path.islink(p)]
    if not paths:
        raise FileNotFoundError("%s holds no fortune files" % root)
    return paths


def fortunes_split(paths, val_every=LM_VAL_EVERY):
    """(training, validation) word lists: each fortune lower-cased, cut into
    words and punctuation marks and ended by <eos>; every val_every-th
    fortune, counted over all files, goes to validation."""
    train, val = [], []
    k = 0
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        for cookie in re.split(r"^%\s*$", text, flags=re.M):
            words = WORD.findall(cookie.lower())
            if not words:
                continue
            (val if k % val_every == 0 else train).extend(words + ["<eos>"])
            k += 1
    return train, val


class Lm:
    """An LSTM language model over words (embedding, one LSTM layer, a
    linear decoder), on the fortunes. Words are numbered by frequency in
    the training text (ties in alphabetical order, so every rank agrees),
    after <unk> (0) and <eos> (1); the model reads the first LM_WORDS and
    predicts the first LM_VOCAB, any other word as <unk>."""
    name = "lm"
    score = "val_loss"
    lr = 1.0
    default_batch = 16

    def __init__(self, torch, root=FORTUNES):
        self.torch = torch
        train, val = fortunes_split(fortunes_files(root))
        counts = Counter(w for w in train if w != "<eos>")
        common = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        self.words = ["<unk>", "<eos>"] + [w for w, _ in
                                           common[:LM_WORDS - 2]]
        index = {w: i for i, w in enumerate(self.words)}
        self.train = torch.tensor([index.get(w, 0) for w in train])
        self.val = torch.tensor([index.get(w, 0) for w in val])
        self.train_size = len(self.train)
        self.test_size = len(self.val)
        self.unk_in = float((self.val == 0).float().mean())
        self.unk_out = float((self.val >= LM_VOCAB).float().mean()) + \
            self.unk_in

    def targets(self, words):
        """The words to predict: those past LM_VOCAB are <unk>."""
        return self.torch.where(words < LM_VOCAB, words,
                                self.torch.zeros_like(words))

    def build(self):
        nn = self.torch.nn

        class WordLstm(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(LM_WORDS, LM_EMBED)
                self.lstm = nn.LSTM(LM_EMBED, LM_HIDDEN, batch_first=True)
                self.decode = nn.Linear(LM_HIDDEN, LM_VOCAB)

            def forward(self, x):
                h, _ = self.lstm(self.embed(x))
                return self.decode(h)
        return WordLstm()

    def batch(self, gen, size):
        """size windows of LM_SEQ words at random places of the training
        text, and the words that follow each."""
        torch = self.torch
        at = torch.randint(0, self.train_size - LM_SEQ - 1, (size,),
                           generator=gen)
        span = at.unsqueeze(1) + torch.arange(LM_SEQ + 1)
        w = self.train[span]
        return w[:, :-1], self.targets(w[:, 1:])

    def loss(self, model, batch):
        x, y = batch
        out = model(x)
        return self.torch.nn.functional.cross_entropy(
            out.reshape(-1, LM_VOCAB), y.reshape(-1))

    def evaluate(self, net):
        """{"val_loss": mean cross-entropy per word of the validation text
        in windows of LM_SEQ words (nats), "perplexity": its exp}."""
        torch = self.torch
        n = (self.test_size - 1) // LM_SEQ
        x = self.val[:n * LM_SEQ].view(n, LM_SEQ)
        y = self.targets(self.val[1:n * LM_SEQ + 1]).view(n, LM_SEQ)
        total = 0.0
        with torch.no_grad():
            for i in range(0, n, 256):
                out = net(x[i:i + 256])
                total += torch.nn.functional.cross_entropy(
                    out.reshape(-1, LM_VOCAB), y[i:i + 256].reshape(-1),
                    reduction="sum").item()
        loss = total / (n * LM_SEQ)
        return {"val_loss": loss, "perplexity": math.exp(loss)}

    def sizes(self):
        return {"train_words": self.train_size,
                "validation_words": self.test_size}

    def describe(self, params, batch):
        return ("word LSTM (embedding %dx%d, LSTM %d, decoder to %d "
                "words), %d parameters (%d bytes of float32 gradient); "
                "fortunes, %d train / %d validation words (%.1f%% <unk> "
                "read, %.1f%% predicted), batch %d windows of %d words "
                "per rank"
                % (LM_WORDS, LM_EMBED, LM_HIDDEN, LM_VOCAB, params,
                   params * 4, self.train_size, self.test_size,
                   self.unk_in * 100, self.unk_out * 100, batch, LM_SEQ))


WORKLOADS = {"digits": Digits, "lm": Lm}

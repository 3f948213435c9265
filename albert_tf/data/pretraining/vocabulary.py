"""What instance creation needs from a tokenizer: batched line -> ids, start-piece table, special ids.

:class:`LineEncoder` turns the lines of one chunk into token ids the way the official reader does
(``create_training_instances``): SentencePiece mode ``tokenize(preprocess_text(line, lower=do_lower_case))``,
where a line that is empty *after* pre-processing separates documents; WordPiece mode ``tokenize(line.strip())``.
In SentencePiece mode all lines of a chunk are encoded with one ``SentencePieceProcessor.encode(list)`` call (the
official calls it once per line) and the official digit-comma re-encoding is applied on ids (only pieces that end
in "<digit>," are re-encoded); the result equals ``FullTokenizer.encode(line, preprocessed=True)`` line for line
(tested on real text).
"""

from __future__ import annotations

from albert_tf.tokenization import FullTokenizer
from albert_tf.tokenization.sentencepiece_tokenizer import SPIECE_UNDERLINE, needs_digit_comma_reencode

__all__ = ["LineEncoder", "TokenizerSpec"]


class TokenizerSpec:
    """Picklable recipe for a :class:`FullTokenizer` (worker processes build their own).

    ``model_bytes``: the model / vocab file's content. The parent process reads the file once (local or through
    ``tf.io.gfile``) and hands the workers :meth:`with_model_bytes`, so a worker never opens a file: that keeps
    TensorFlow out of the workers and makes ``ram://`` work, whose files exist only in the parent's memory.
    """

    def __init__(self, vocab_file=None, spm_model_file=None, do_lower_case=True, keep_accents=False,
                 model_bytes: bytes | None = None):
        self.vocab_file = vocab_file
        self.spm_model_file = spm_model_file
        self.do_lower_case = bool(do_lower_case)
        self.keep_accents = bool(keep_accents)
        self.model_bytes = model_bytes

    def with_model_bytes(self, model_bytes: bytes) -> TokenizerSpec:
        """The same recipe carrying the file's content (what :meth:`build` then reads instead of the file)."""
        return TokenizerSpec(self.vocab_file, self.spm_model_file, self.do_lower_case, self.keep_accents,
                             model_bytes=model_bytes)

    def build(self) -> FullTokenizer:
        spm = self.spm_model_file or None
        source = self.model_bytes if self.model_bytes is not None else (spm or self.vocab_file)
        return FullTokenizer(
            vocab_file=None if spm else source,
            do_lower_case=self.do_lower_case,
            spm_model_file=source if spm else None,
            keep_accents=self.keep_accents,
        )


class LineEncoder:
    """Tokenizer tables for the data pipeline: ids of lines, start-piece flags, random-word ids, special ids."""

    def __init__(self, tokenizer: FullTokenizer):
        self.tokenizer = tokenizer
        self.is_spm = tokenizer.sp_model is not None
        size = max(max(tokenizer.vocab.values()) + 1, tokenizer.vocab_size)
        pieces = [tokenizer.inv_vocab.get(i) for i in range(size)]
        # id -> 1 if the piece starts a word (official `_is_start_piece_sp` / "not ##"); unknown ids count as starts.
        self.start_table = [1 if p is None or tokenizer.is_start_piece(p) else 0 for p in pieces]
        # The official draws random words as `vocab_words[rng.randint(0, V - 1)]` with vocab_words = vocab keys.
        self.random_word_ids = list(tokenizer.vocab.values())
        self.cls_id = tokenizer.cls_id
        self.sep_id = tokenizer.sep_id
        self.mask_id = tokenizer.mask_id
        self.vocab_size = size
        self._lower = tokenizer.do_lower_case
        if self.is_spm:
            sp = tokenizer.sp_model
            self._sp = sp
            self._comma_fix = tokenizer.official_digit_comma
            self._needs_fix = {i for i, p in enumerate(pieces) if p is not None and needs_digit_comma_reencode(p)}
            self._comma_id = sp.PieceToId(",")

    def preprocess(self, line: str) -> str:
        """``FullTokenizer.preprocess`` with a fast path for ASCII lines, where NFKD and the removal of combining
        marks are the identity, so ``preprocess_text`` reduces to the white-space collapse and ``lower()``."""
        if line.isascii():
            line = " ".join(line.split())
            return line.lower() if self._lower else line
        return self.tokenizer.preprocess(line)

    def encode_lines(self, lines: list[str]) -> tuple[list[list[int] | None], int]:
        """Ids of every line; ``None`` marks a document separator. Returns (per-line ids, lines without tokens).

        A line that is not a separator but yields no tokens (e.g. only control characters) gives ``[]``; the caller
        drops it, as the official does, and counts it.
        """
        tok = self.tokenizer
        if self.is_spm:
            pre = [self.preprocess(line) for line in lines]
            idx = [i for i, p in enumerate(pre) if p]
            encoded = self._sp.encode([pre[i] for i in idx], out_type=int, num_threads=1) if idx else []
            out: list[list[int] | None] = [None] * len(lines)
            for i, ids in zip(idx, encoded, strict=True):
                if self._comma_fix and self._needs_fix and not self._needs_fix.isdisjoint(ids):
                    ids = self._digit_comma(ids)
                out[i] = ids
        else:
            out = []
            for line in lines:
                line = line.strip()
                out.append(tok.convert_tokens_to_ids(tok.tokenize(line)) if line else None)
        empty = sum(1 for o in out if o is not None and not o)
        return out, empty

    def _digit_comma(self, ids: list[int]) -> list[int]:
        """Official ``encode_pieces`` re-encoding of pieces ending in "<digit>," (dummy-prefix "▁" kept)."""
        sp = self._sp
        new: list[int] = []
        for i in ids:
            if i in self._needs_fix:
                piece = sp.IdToPiece(i)
                new.extend(sp.encode(piece[:-1].replace(SPIECE_UNDERLINE, ""), out_type=int))
                new.append(self._comma_id)
            else:
                new.append(i)
        return new

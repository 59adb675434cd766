"""sentence-transformers: SentenceTransformer, CrossEncoder and SparseEncoder loaded from tiny BERT
checkpoints written to a temporary folder (random weights, a word-level vocabulary of a few tokens),
observed."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from .common import LibraryTables

WORDS = ["hello", "world", "query", "document", "fabric", "model"]
BERT = {
    "vocab_size": 5 + len(WORDS), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "max_position_embeddings": 64, "pad_token_id": 0,
}


def _checkpoint(folder: Path, model_class: Any, **config: Any) -> str:
    """A BERT checkpoint with a tokenizer in folder (nothing downloaded)."""
    import transformers

    folder.mkdir()
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n", encoding="utf-8")
    transformers.BertTokenizerFast(vocab_file=str(vocab)).save_pretrained(folder)
    model_class(transformers.BertConfig(**BERT, **config)).save_pretrained(folder)
    return str(folder)


def describe(tables: LibraryTables) -> None:
    import sentence_transformers
    import sentence_transformers.models
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    tables.public_modules = ("sentence_transformers", "sentence_transformers.models")
    for cls in (
        sentence_transformers.SentenceTransformer,
        sentence_transformers.CrossEncoder,
        sentence_transformers.SparseEncoder,
        sentence_transformers.MultiVectorEncoder,
    ):
        tables.add_class(cls)
    for name in ("Transformer", "Pooling", "Dense", "Normalize"):
        tables.add_class(getattr(sentence_transformers.models, name))

    sentences = ["hello world", "fabric model"]
    with tempfile.TemporaryDirectory(prefix="fabric-lsp-tables-") as scratch:
        root = Path(scratch)
        torch.manual_seed(0)
        encoder = sentence_transformers.SentenceTransformer(
            _checkpoint(root / "bert", transformers.BertModel), device="cpu"
        )
        tables.record_built(encoder)
        tables.observe(encoder, "encode", lambda m: m(sentences), "encode(sentences)")
        tables.observe(encoder, "encode_query", lambda m: m(sentences), "encode_query(sentences)")
        tables.observe(encoder, "encode_document", lambda m: m(sentences), "encode_document(sentences)")
        embeddings = encoder.encode(sentences, convert_to_tensor=True)
        tables.observe(encoder, "similarity", lambda m: m(embeddings, embeddings), "similarity(embeddings, embeddings)")
        tables.observe(encoder, "tokenize", lambda m: m(sentences), "tokenize(sentences)")
        tables.observe(encoder, "get_embedding_dimension", lambda m: m(), "get_embedding_dimension()")
        tables.observe(encoder, "save_pretrained", lambda m: m(str(root / "saved")), "save_pretrained(path)")
        tables.observe(encoder, "gradient_checkpointing_enable", lambda m: m(), "gradient_checkpointing_enable()")

        torch.manual_seed(0)
        cross = sentence_transformers.CrossEncoder(
            _checkpoint(root / "bert-cls", transformers.BertForSequenceClassification, num_labels=1), device="cpu"
        )
        tables.record_built(cross)
        pairs = [("hello world", "fabric model")]
        tables.observe(cross, "predict", lambda m: m(pairs), "predict(pairs)")
        tables.observe(cross, "rank", lambda m: m("hello", ["world", "model"]), "rank(query, documents)")

        torch.manual_seed(0)
        sparse = sentence_transformers.SparseEncoder(
            _checkpoint(root / "bert-mlm", transformers.BertForMaskedLM), device="cpu"
        )
        tables.record_built(sparse)
        tables.observe(sparse, "encode", lambda m: m(sentences), "encode(sentences)")
        tables.observe(sparse, "encode_query", lambda m: m(sentences), "encode_query(sentences)")

#!/usr/bin/python3
"""Makes the tiny transformers.js models committed under packages/transformers/test/fixtures/.

Run with Debian's python3-onnx (onnx 1.12, no numpy needed):

    /usr/bin/python3 scripts/make-transformers-models.py

Each model is a folder as transformers.js reads it from `env.localModelPath`
(config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx), so
`pipeline(task, '<folder>')` loads it with remote models disabled. The
weights follow formulas that test/support/tiny-transformers.ts recomputes in
JavaScript, so a test checks every number the library returns.

One word-level vocabulary (VOCAB below, lower-cased, split on whitespace and
punctuation) serves all three:

- tiny-bert-embed (bert, feature-extraction): last_hidden_state[b,s,:] =
  E[input_ids[b,s]] * attention_mask[b,s], E[v][h] = ((v*3 + h*5) % 11 - 5) / 8, H = 8.
- tiny-bert-sentiment (bert, text-classification): logits[b,:] = sum over s of
  C[input_ids[b,s]], C[v] = [1, 0] for the negative words, [0, 1] for the
  positive ones, [0, 0] otherwise; labels NEGATIVE, POSITIVE.
- tiny-gpt2 (gpt2, text-generation): a bigram model without past key values,
  logits[b,s,:] = G[input_ids[b,s]], G[v][NEXT[v]] = 8, else 0, so greedy
  decoding follows NEXT: the -> cat -> sat -> on -> the … and dog -> ran -> [EOS].
- tiny-bert-embed-corrupt: tiny-bert-embed with onnx/model.onnx cut to its
  first 64 bytes, for the failed-reload test.
"""

import json
import os
import struct

from onnx import TensorProto, helper, save

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'packages', 'transformers', 'test', 'fixtures')
OPSET = 13

VOCAB = [
    '[PAD]', '[UNK]', '[CLS]', '[SEP]', '[EOS]',
    'the', 'cat', 'sat', 'on', 'mat', 'dog', 'ran', 'a', 'movie', 'was', 'is', 'very', 'not',
    'good', 'great', 'fun', 'bad', 'awful', 'boring',
]
IDS = {w: i for i, w in enumerate(VOCAB)}
POSITIVE = ['good', 'great', 'fun']
NEGATIVE = ['bad', 'awful', 'boring']
NEXT = {'the': 'cat', 'cat': 'sat', 'sat': 'on', 'on': 'the', 'dog': 'ran', 'ran': '[EOS]', 'a': 'dog'}
HIDDEN = 8


def tensor(name, rows, cols, value):
    values = [value(i, j) for i in range(rows) for j in range(cols)]
    raw = struct.pack('<%df' % len(values), *values)
    return helper.make_tensor(name, TensorProto.FLOAT, [rows, cols], raw, raw=True)


def model(graph):
    m = helper.make_model(graph, producer_name='infersignal-make-transformers-models', opset_imports=[helper.make_opsetid('', OPSET)])
    # onnxruntime 1.30 reads IR 8 fine; pin it so the file does not change with the onnx version.
    m.ir_version = 8
    return m


def ids_input():
    return helper.make_tensor_value_info('input_ids', TensorProto.INT64, ['batch', 'sequence'])


def mask_input():
    return helper.make_tensor_value_info('attention_mask', TensorProto.INT64, ['batch', 'sequence'])


def embed_model():
    nodes = [
        helper.make_node('Gather', ['E', 'input_ids'], ['rows']),
        helper.make_node('Cast', ['attention_mask'], ['maskf'], to=TensorProto.FLOAT),
        helper.make_node('Unsqueeze', ['maskf', 'axis_last'], ['mask3']),
        helper.make_node('Mul', ['rows', 'mask3'], ['last_hidden_state']),
    ]
    inits = [
        tensor('E', len(VOCAB), HIDDEN, lambda v, h: ((v * 3 + h * 5) % 11 - 5) / 8),
        helper.make_tensor('axis_last', TensorProto.INT64, [1], [-1]),
    ]
    graph = helper.make_graph(
        nodes, 'tiny_bert_embed', [ids_input(), mask_input()],
        [helper.make_tensor_value_info('last_hidden_state', TensorProto.FLOAT, ['batch', 'sequence', HIDDEN])],
        inits,
    )
    return model(graph)


def sentiment_model():
    def score(v, j):
        word = VOCAB[v]
        return 1.0 if (j == 0 and word in NEGATIVE) or (j == 1 and word in POSITIVE) else 0.0

    nodes = [
        helper.make_node('Gather', ['C', 'input_ids'], ['rows']),
        helper.make_node('ReduceSum', ['rows', 'axis_sequence'], ['logits'], keepdims=0),
    ]
    inits = [
        tensor('C', len(VOCAB), 2, score),
        helper.make_tensor('axis_sequence', TensorProto.INT64, [1], [1]),
    ]
    graph = helper.make_graph(
        nodes, 'tiny_bert_sentiment', [ids_input(), mask_input()],
        [helper.make_tensor_value_info('logits', TensorProto.FLOAT, ['batch', 2])],
        inits,
    )
    return model(graph)


def gpt2_model():
    nodes = [helper.make_node('Gather', ['G', 'input_ids'], ['logits'])]
    inits = [tensor('G', len(VOCAB), len(VOCAB), lambda v, w: 8.0 if NEXT.get(VOCAB[v]) == VOCAB[w] else 0.0)]
    graph = helper.make_graph(
        nodes, 'tiny_gpt2', [ids_input()],
        [helper.make_tensor_value_info('logits', TensorProto.FLOAT, ['batch', 'sequence', len(VOCAB)])],
        inits,
    )
    return model(graph)


def added(token):
    return {'id': IDS[token], 'content': token, 'single_word': False, 'lstrip': False, 'rstrip': False,
            'normalized': False, 'special': True}


def tokenizer(bert):
    specials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[EOS]']
    post = None
    if bert:
        post = {
            'type': 'TemplateProcessing',
            'single': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                       {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}],
            'pair': [{'SpecialToken': {'id': '[CLS]', 'type_id': 0}}, {'Sequence': {'id': 'A', 'type_id': 0}},
                     {'SpecialToken': {'id': '[SEP]', 'type_id': 0}}, {'Sequence': {'id': 'B', 'type_id': 1}},
                     {'SpecialToken': {'id': '[SEP]', 'type_id': 1}}],
            'special_tokens': {t: {'id': t, 'ids': [IDS[t]], 'tokens': [t]} for t in ('[CLS]', '[SEP]')},
        }
    return {
        'version': '1.0',
        'truncation': None,
        'padding': None,
        'added_tokens': [added(t) for t in specials],
        'normalizer': {'type': 'Lowercase'},
        'pre_tokenizer': {'type': 'Whitespace'},
        'post_processor': post,
        'decoder': {'type': 'WordPiece', 'prefix': '##', 'cleanup': True},
        'model': {'type': 'WordLevel', 'vocab': IDS, 'unk_token': '[UNK]'},
    }


def bert_config(extra):
    config = {
        'model_type': 'bert', 'architectures': ['BertModel'], 'vocab_size': len(VOCAB), 'hidden_size': HIDDEN,
        'num_hidden_layers': 1, 'num_attention_heads': 1, 'max_position_embeddings': 64, 'pad_token_id': 0,
    }
    config.update(extra)
    return config


BERT_TOKENIZER_CONFIG = {
    'tokenizer_class': 'BertTokenizer', 'model_max_length': 64, 'do_lower_case': True,
    'pad_token': '[PAD]', 'unk_token': '[UNK]', 'cls_token': '[CLS]', 'sep_token': '[SEP]',
}
GPT2_TOKENIZER_CONFIG = {
    'tokenizer_class': 'GPT2Tokenizer', 'model_max_length': 64, 'add_bos_token': False,
    'pad_token': '[PAD]', 'unk_token': '[UNK]', 'bos_token': '[EOS]', 'eos_token': '[EOS]',
}
GPT2_CONFIG = {
    'model_type': 'gpt2', 'architectures': ['GPT2LMHeadModel'], 'vocab_size': len(VOCAB), 'n_embd': HIDDEN,
    'n_layer': 1, 'n_head': 1, 'n_positions': 64, 'bos_token_id': IDS['[EOS]'], 'eos_token_id': IDS['[EOS]'],
    'pad_token_id': IDS['[PAD]'], 'use_cache': False,
}


def write(folder, config, tokenizer_json, tokenizer_config, onnx_model, cut=None):
    path = os.path.join(OUT, folder)
    os.makedirs(os.path.join(path, 'onnx'), exist_ok=True)
    for name, value in (('config.json', config), ('tokenizer.json', tokenizer_json), ('tokenizer_config.json', tokenizer_config)):
        with open(os.path.join(path, name), 'w') as f:
            json.dump(value, f, indent=1, sort_keys=True)
            f.write('\n')
    onnx_path = os.path.join(path, 'onnx', 'model.onnx')
    save(onnx_model, onnx_path)
    if cut is not None:
        with open(onnx_path, 'rb') as f:
            head = f.read(cut)
        with open(onnx_path, 'wb') as f:
            f.write(head)
    print('%s %d bytes' % (os.path.relpath(onnx_path), os.path.getsize(onnx_path)))


def main():
    write('tiny-bert-embed', bert_config({}), tokenizer(True), BERT_TOKENIZER_CONFIG, embed_model())
    write('tiny-bert-embed-corrupt', bert_config({}), tokenizer(True), BERT_TOKENIZER_CONFIG, embed_model(), cut=64)
    write('tiny-bert-sentiment', bert_config({
        'architectures': ['BertForSequenceClassification'],
        'id2label': {'0': 'NEGATIVE', '1': 'POSITIVE'}, 'label2id': {'NEGATIVE': 0, 'POSITIVE': 1},
    }), tokenizer(True), BERT_TOKENIZER_CONFIG, sentiment_model())
    write('tiny-gpt2', GPT2_CONFIG, tokenizer(False), GPT2_TOKENIZER_CONFIG, gpt2_model())


if __name__ == '__main__':
    main()

# Reference: InferenceX sample_random_requests (MEASUREMENT.md Part 2 §1.2), single-worker path,
# with HF `tokenizers` on the real engine's tokenizer.json. Prints lengths + sha256 of prompt text.
import hashlib, sys, numpy as np
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
isl, osl, n = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
vocab = tok.get_vocab_size(with_added_tokens=False)
np.random.seed(0)
ins = np.random.randint(int(isl*0.8), isl+1, size=n)
outs = np.random.randint(int(osl*0.8), osl+1, size=n)
offs = np.random.randint(0, vocab, size=n)
for i in range(n):
    ids = [int((offs[i] + i + j) % vocab) for j in range(ins[i])]
    text = tok.decode(ids, skip_special_tokens=False)
    rounds = 0
    for _ in range(10):
        enc = tok.encode(text, add_special_tokens=False).ids
        if len(enc) == ins[i]: break
        rounds += 1
        if len(enc) > ins[i]: enc = enc[:ins[i]]
        else: enc = enc + [0]*(ins[i]-len(enc))  # padding differs by design; marker only
        text = tok.decode(enc, skip_special_tokens=False)
    plen = len(tok.encode(text, add_special_tokens=False).ids)
    print(i, ins[i], outs[i], offs[i], plen, rounds, hashlib.sha256(text.encode()).hexdigest()[:16])

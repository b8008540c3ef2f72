// Prints what an independent GGUF parser (npm's @huggingface/gguf) reads from a file, one line
// per metadata key and per tensor, for tests/io/gguf_test.cc to compare with what kiln wrote.
//   node tests/io/gguf_peer_check.mjs FILE   (with NODE_PATH pointing at tools/npm/node_modules)
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH ?? ".", "x.js"));
const { gguf } = await import(require.resolve("@huggingface/gguf"));
const { metadata, tensorInfos } = await gguf(process.argv[2], { allowLocalFile: true });
const text = (v) => JSON.stringify(v, (k, x) => (typeof x === "bigint" ? x.toString() : x));
for (const [key, value] of Object.entries(metadata)) console.log(`kv ${key} = ${text(value)}`);
for (const t of tensorInfos) console.log(`tensor ${t.name} type ${t.dtype} shape ${t.shape.join(",")} offset ${t.offset}`);

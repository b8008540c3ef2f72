// Runs an ONNX model with ONNX Runtime (npm's onnxruntime-node, installed in tools/npm by
// `scripts/install-deps.sh --peers`) for tests/onnx/onnx_peer_test.cc:
//   node tests/onnx/ort_run.mjs MODEL OUTDIR NAME=DTYPE:D1,D2,...:FILE ...
// Each input is raw little-endian data (DTYPE float32, float64, int32, int64 or bool) of the given
// dimensions. Writes each output k to OUTDIR/output_K.bin as raw float32 and prints
// "output K NAME DIMS" per output.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const require = createRequire(path.resolve(process.env.NODE_PATH ?? ".", "x.js"));
const ort = require("onnxruntime-node");
const arrays = {
  float32: Float32Array, float64: Float64Array, int32: Int32Array, int64: BigInt64Array, bool: Uint8Array,
};
const [model, outdir, ...specs] = process.argv.slice(2);
const feeds = {};
for (const spec of specs) {
  const [name, rest] = spec.split("=");
  const [dtype, dims, file] = rest.split(":");
  const bytes = fs.readFileSync(file);
  const Array = arrays[dtype];
  const data = new Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  const shape = dims === "" ? [] : dims.split(",").map(Number);
  feeds[name] = new ort.Tensor(dtype, data, shape);
}
const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 2, interOpNumThreads: 1 });
const results = await session.run(feeds);
session.outputNames.forEach((name, k) => {
  const t = results[name];
  const values = Float32Array.from(t.data, Number);
  fs.writeFileSync(path.join(outdir, `output_${k}.bin`), Buffer.from(values.buffer));
  console.log(`output ${k} ${name} ${t.dims.join(",")}`);
});

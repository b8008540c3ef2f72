// ONNX Runtime's side of bench/onnx_vs_ort.py: times session.run of MODEL on a float32 input of
// DIMS (values uniform in [-1, 1), as kiln_bench's onnx/ cases feed) with THREADS intra-op
// threads, for at least a second after a warm-up call; prints the milliseconds per call.
//   NODE_PATH=tools/npm/node_modules node bench/ort_bench.mjs MODEL D1,D2,... THREADS
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.resolve(process.env.NODE_PATH ?? ".", "x.js"));
const ort = require("onnxruntime-node");
const [model, dimsText, threads] = process.argv.slice(2);
const dims = dimsText.split(",").map(Number);
const count = dims.reduce((a, b) => a * b, 1);
const data = new Float32Array(count);
for (let i = 0; i < count; ++i) data[i] = Math.fround(Math.random() * 2 - 1);
const session = await ort.InferenceSession.create(model, {
  intraOpNumThreads: Number(threads), interOpNumThreads: 1, graphOptimizationLevel: "all",
});
const feeds = { [session.inputNames[0]]: new ort.Tensor("float32", data, dims) };
await session.run(feeds);  // Warm-up.
let calls = 0;
const start = process.hrtime.bigint();
let elapsed = 0;
while (elapsed < 1.0 || calls < 3) {
  await session.run(feeds);
  ++calls;
  elapsed = Number(process.hrtime.bigint() - start) / 1e9;
}
console.log((elapsed * 1000 / calls).toFixed(4));

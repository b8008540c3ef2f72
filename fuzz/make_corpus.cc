// Writes the seed corpora of the fuzz targets: small valid inputs of each kind, made with kiln's
// own writers, one folder per target under the argument folder (fuzz/corpus is its output,
// committed): make_corpus fuzz/corpus

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/data/csv.h"
#include "kiln/io/gguf.h"
#include "kiln/io/image.h"
#include "kiln/io/safetensors.h"
#include "kiln/kiln.h"
#include "kiln/model/checkpoint.h"
#include "kiln/onnx/onnx.h"

namespace fs = std::filesystem;
using namespace kiln;

namespace {

void Write(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string Read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Values in [-1.6, 1.6] (or, `unit`, in [0.1, 0.9]).
std::vector<float> Values(int64_t n, bool unit = false) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = static_cast<float>(static_cast<int>(i % 23) - 11) / 7.0f;
    if (unit) v[i] = v[i] / 4 + 0.5f;
  }
  return v;
}

Tensor Floats(const std::vector<int64_t>& dims, bool unit = false) {
  return Tensor::FromFlat(Shape(DType::Float32, dims), Values(Shape(DType::Float32, dims).Size(), unit));
}

template <typename H>
Tensor Halves(DType dtype, int64_t n) {
  std::vector<H> v;
  for (float f : Values(n)) v.push_back(H(f));
  return Tensor::FromFlat(Shape(dtype, {n}), v);
}

std::string Idx(uint8_t type, const std::vector<uint32_t>& dims, size_t item) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  size_t n = 1;
  for (uint32_t d : dims) {
    for (int b = 24; b >= 0; b -= 8) s += static_cast<char>((d >> b) & 0xFF);
    n *= d;
  }
  for (size_t i = 0; i < n * item; ++i) s += static_cast<char>(i * 37 % 251);
  return s;
}

void WriteGzip(const fs::path& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus OUTPUT_FOLDER\n");
    return 2;
  }
  const fs::path out = argv[1];
  auto dir = [&](const std::string& target) {
    fs::create_directories(out / target);
    return out / target;
  };
  const Tensor w = Floats({2, 256});
  // GGUF: metadata of several value types, float and ggml-quantized tensors.
  const nn::GGMLType types[] = {nn::GGMLType::F32,  nn::GGMLType::F16,  nn::GGMLType::Q8_0,
                                nn::GGMLType::Q4_0, nn::GGMLType::Q4_K, nn::GGMLType::Q6_K};
  for (int i = 0; i < 6; ++i) {
    io::GgufFile f;
    f.metadata.emplace_back("general.architecture", io::GgufValue::String("llama"));
    f.metadata.emplace_back("n", io::GgufValue::Uint32(static_cast<uint32_t>(i)));
    f.metadata.emplace_back("list", io::GgufValue::Array(io::GgufType::Int32, {io::GgufValue::Int32(i)}));
    f.tensors.push_back(io::ToGgufTensor("w", w, types[i]));
    io::WriteGguf((dir("gguf") / (std::string(nn::GGMLTypeName(types[i])) + ".gguf")).string(), f);
  }
  // npy and npz.
  const std::map<std::string, Tensor> arrays = {{"f32", Floats({2, 3})},
                                                {"i64", Tensor::FromValue(std::vector<int64_t>{1, -2, 3})},
                                                {"b", Tensor::FromValue(std::vector<bool>{true, false})},
                                                {"f16", Halves<float16>(DType::Float16, 3)},
                                                {"scalar", Tensor::FromValue(2.5)}};
  for (const auto& [name, t] : arrays) io::WriteNpy((dir("npy") / (name + ".npy")).string(), t);
  io::WriteNpz((dir("npz") / "stored.npz").string(), arrays, false);
  io::WriteNpz((dir("npz") / "deflated.npz").string(), arrays, true);
  // safetensors, with a packed dtype and metadata.
  io::WriteSafetensors((dir("safetensors") / "a.safetensors").string(),
                       {{"dense/weights", Floats({2, 2})},
                        {"b", Halves<bfloat16>(DType::BFloat16, 4)},
                        {"q", Tensor::FromBytes(Shape(DType::Int4, {4}), std::vector<uint8_t>{0x21, 0xC3})}},
                       {{"format", "pt"}});
  // IDX, plain and gzip'd.
  Write(dir("idx") / "u8.idx", Idx(0x08, {2, 3, 3}, 1));
  Write(dir("idx") / "f32.idx", Idx(0x0D, {4}, 4));
  WriteGzip(dir("idx") / "i32.idx.gz", Idx(0x0C, {3, 2}, 4));
  // Images.
  const Tensor gray = Floats({5, 7, 1}, true);
  const Tensor rgb = Floats({6, 4, 3}, true);
  io::WriteImage((dir("image") / "gray.png").string(), gray);
  io::WriteImage((dir("image") / "rgb.png").string(), rgb);
  io::WriteImage((dir("image") / "rgba.png").string(), Floats({3, 3, 4}, true));
  io::WriteImage((dir("image") / "gray.jpg").string(), gray);
  io::WriteImage((dir("image") / "rgb.jpg").string(), rgb, 80);
  // CSV.
  Write(dir("csv") / "a.csv", "x,y,label\n1.5,-2,cat\n+3,4e2,dog\n\"5\",\"6\",\"a,b\"\n");
  Write(dir("csv") / "b.csv", "\xEF\xBB\xBFn;m\r\n1;2\r\n3;4\r\n");
  // JSON.
  Write(dir("json") / "a.json", R"({"a":[1,2.5,-3e10,true,false,null],"b":{"c":"d\u00e9\n"}})");
  Write(dir("json") / "header.json",
        R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})");
  // Serialized tensors.
  for (const auto& [name, t] : arrays) {
    std::ostringstream s;
    t.Serialize(s);
    Write(dir("tensor") / (name + ".bin"), s.str());
  }
  // Settings (first line) and a backend configuration (second).
  Write(dir("settings") / "a.txt",
        "steps=100;learning_rate=0.01;/model/dense/units=[64,32];name=run\nthreads=2");
  Write(dir("settings") / "b.txt", "flag=true;x=-5;y=+1.5e-3");
  // Tokenizers: a trained byte-level BPE, WordPiece (BERT's pipeline), Unigram (Metaspace) and
  // Llama 2's byte-fallback BPE; GPT-2's vocab.json and merges.txt, joined by a NUL byte.
  tokenizers::TrainBpe({"the quick brown fox jumps over the lazy dog. It's 2024!"}, 300)
      .Save((dir("tokenizer_json") / "bpe.json").string());
  Write(
      dir("tokenizer_json") / "wordpiece.json",
      R"({"added_tokens":[{"id":1,"content":"[UNK]","special":true},{"id":2,"content":"[CLS]","special":true},)"
      R"({"id":3,"content":"[SEP]","special":true}],"normalizer":{"type":"BertNormalizer","lowercase":true},)"
      R"("pre_tokenizer":{"type":"BertPreTokenizer"},"post_processor":{"type":"BertProcessing",)"
      R"("sep":["[SEP]",3],"cls":["[CLS]",2]},"decoder":{"type":"WordPiece","prefix":"##"},)"
      R"("model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[PAD]":0,"[UNK]":1,"[CLS]":2,)"
      R"("[SEP]":3,"hello":4,"world":5,"##s":6,",":7}}})");
  Write(
      dir("tokenizer_json") / "unigram.json",
      R"({"normalizer":{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"},)"
      R"({"type":"Replace","pattern":{"Regex":" {2,}"},"content":" "}]},)"
      R"("pre_tokenizer":{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first","split":true},)"
      R"("decoder":{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first"},)"
      R"("model":{"type":"Unigram","unk_id":0,"byte_fallback":true,"vocab":[["<unk>",0],)"
      R"(["\u2581",-2],["\u2581he",-3],["llo",-2.5],["<0x41>",-9],["w",-4],["o",-4],["r",-4],["l",-4],["d",-4]]}})");
  Write(
      dir("tokenizer_json") / "llama2.json",
      R"({"added_tokens":[{"id":0,"content":"<unk>","special":true},{"id":1,"content":"<s>","special":true}],)"
      R"("normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"\u2581"},)"
      R"({"type":"Replace","pattern":{"String":" "},"content":"\u2581"}]},)"
      R"("post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},)"
      R"({"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}},)"
      R"("decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},)"
      R"({"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},)"
      R"("model":{"type":"BPE","unk_token":"<unk>","fuse_unk":true,"byte_fallback":true,"vocab":{"<unk>":0,)"
      R"("<s>":1,"<0x41>":2,"<0xC3>":3,"<0xA9>":4,"\u2581":5,"h":6,"i":7,"hi":8,"\u2581hi":9},)"
      R"("merges":["h i",["\u2581","hi"]]}})");
  Write(dir("gpt2_files") / "a",
        std::string(R"({"a":0,"b":1,"ab":2,"\u0120":3,"\u0120ab":4,"<|endoftext|>":5})") + '\0' +
            "#version: 0.2\na b\n\u0120 ab\n");
  // HuggingFace config.json files: Llama with Llama 3 rope scaling and GPT-2 (hf_config_fuzz).
  Write(
      dir("hf_config") / "llama.json",
      transformers::Config::Llama().Rope(transformers::RopeScaling::kLlama3, 8, 8192).EosTokenId(2).ToJson());
  Write(dir("hf_config") / "gpt2.json", transformers::Config::Gpt2().ToJson());
  Write(
      dir("hf_config") / "qwen2.json",
      R"({"model_type":"qwen2","vocab_size":100,"hidden_size":32,"intermediate_size":64,"num_hidden_layers":2,)"
      R"("num_attention_heads":4,"num_key_value_heads":2,"rope_scaling":{"type":"dynamic","factor":2.0},)"
      R"("eos_token_id":[1,2],"tie_word_embeddings":true})");
  // A checkpoint record, of the store checkpoint_fuzz saves.
  {
    const fs::path ckpt = fs::temp_directory_path() / "kiln_make_corpus_ckpt";
    fs::remove_all(ckpt);
    model::Store store;
    store.RootScope().In("dense").VariableWithValue(
        "weights", Tensor::FromFlat(Shape(DType::Float32, {2, 2}), std::vector<float>{1, 2, 3, 4}));
    store.SetParam("steps", 10);
    checkpoint::Handler h = checkpoint::Build(store).Dir(ckpt.string()).Done();
    const std::string name = h.Save();
    Write(dir("checkpoint") / "record.json", Read(ckpt / (name + ".json")));
    fs::remove_all(ckpt);
  }
  // ONNX: models kiln exports (dense and convolutional, a gather, a dynamic batch axis) and
  // TensorProto files.
  {
    model::Store store;
    store.RootScope().In("dense").VariableWithValue("weights", Floats({4, 3}));
    const onnx::ExportFn dense = [](model::Scope scope, const std::any&, std::vector<graph::Node> in) {
      graph::Node w = scope.In("dense").InspectVariable("weights").NodeValue(in[0].graph());
      graph::Node h = graph::Max(graph::MatMul(in[0], w), graph::ScalarLike(in[0], 0));
      return std::vector<graph::Node>{graph::Softmax(h), graph::ReduceSum(h, {1})};
    };
    onnx::Export(store, dense, {Shape::MakeDynamic(DType::Float32, {Shape::kDynamic, 4}, {"batch", ""})},
                 (dir("onnx") / "dense.onnx").string());
    const onnx::ExportFn conv = [](model::Scope, const std::any&, std::vector<graph::Node> in) {
      graph::Node k = graph::Const(in[0].graph(), Floats({3, 3, 2, 4}));
      graph::Node y = graph::Convolve(in[0], k).PadSame().Done();
      y = graph::MaxPool(y).Window(2).Done();
      return std::vector<graph::Node>{graph::ArgMax(graph::Reshape(y, {-1, 4 * 4 * 4}), 1)};
    };
    onnx::Export(store, conv, {Shape(DType::Float32, {1, 8, 8, 2})}, (dir("onnx") / "conv.onnx").string());
    onnx::WriteTensorProto((dir("onnx") / "floats.pb").string(), Floats({2, 3}));
    onnx::WriteTensorProto((dir("onnx") / "ints.pb").string(),
                           Tensor::FromFlat(Shape(DType::Int64, {3}), std::vector<int64_t>{1, -2, 3}));
  }
  return 0;
}

// The SentencePiece library on its own (no kiln in this process): trains models with its
// trainer and prints its own ids and decodings, for sentencepiece_test.cc to compare kiln with.
//   spm_reference train INPUT PREFIX VOCAB_SIZE MODEL_TYPE [EXTRA_FLAGS]
//   spm_reference encode MODEL TEXTS   (TEXTS: texts separated by NUL bytes; prints per text a
//                                       line of ids and a line of the decoded text in hex)

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 5 && args[0] == "train") {
    const std::string flags = "--input=" + args[1] + " --model_prefix=" + args[2] +
                              " --vocab_size=" + args[3] + " --model_type=" + args[4] + " --minloglevel=2 " +
                              (args.size() > 5 ? args[5] : "");
    const auto status = sentencepiece::SentencePieceTrainer::Train(flags);
    if (!status.ok()) {
      std::cerr << status.ToString() << "\n";
      return 1;
    }
    return 0;
  }
  if (args.size() == 3 && args[0] == "encode") {
    sentencepiece::SentencePieceProcessor sp;
    const auto status = sp.Load(args[1]);
    if (!status.ok()) {
      std::cerr << status.ToString() << "\n";
      return 1;
    }
    std::ifstream f(args[2], std::ios::binary);
    std::stringstream all;
    all << f.rdbuf();
    std::string text;
    std::istringstream in(all.str());
    while (std::getline(in, text, '\0')) {
      const std::vector<int> ids = sp.EncodeAsIds(text);
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << "\n";
      for (const unsigned char c : sp.DecodeIds(ids)) {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", c);
        std::cout << hex;
      }
      std::cout << "\n";
    }
    return 0;
  }
  std::cerr << "usage: spm_reference train INPUT PREFIX VOCAB_SIZE MODEL_TYPE [FLAGS] | encode MODEL TEXTS\n";
  return 2;
}

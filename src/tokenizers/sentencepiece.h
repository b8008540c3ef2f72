#pragma once
// Internal: a SentencePiece model held by the SentencePiece library (through the module of
// sentencepiece_module.h), which encodes and decodes for the Tokenizer.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln::tokenizers {

class SentencePieceModel {
 public:
  /// Loads `path` with the library's SentencePieceProcessor; kiln::Error naming the file and the
  /// library's message when it refuses it, or when the module cannot be loaded.
  explicit SentencePieceModel(const std::string& path);
  ~SentencePieceModel();
  SentencePieceModel(const SentencePieceModel&) = delete;
  SentencePieceModel& operator=(const SentencePieceModel&) = delete;

  /// Appends the library's ids of `text`.
  void Encode(std::string_view text, std::vector<int32_t>& ids) const;
  /// The library's text of `ids` (control symbols dropped, as the library does).
  std::string Decode(const std::vector<int32_t>& ids) const;
  int32_t Size() const { return static_cast<int32_t>(pieces_.size()); }
  const std::string& Piece(int32_t id) const { return pieces_[id]; }
  std::optional<int32_t> PieceToId(std::string_view piece) const;
  bool IsControl(int32_t id) const { return control_[id]; }
  /// The library's BOS, EOS, PAD and UNK ids (nullopt where the model has none).
  std::optional<int32_t> Special(int which) const;

 private:
  void* processor_ = nullptr;
  std::string path_;
  std::vector<std::string> pieces_;
  std::vector<bool> control_;
  std::unordered_map<std::string, int32_t> ids_;
};

}  // namespace kiln::tokenizers

#pragma once
// Internal: a pipeline from a parsed tokenizer.json document, and back to its text.

#include <memory>
#include <string>

#include "io/json.h"
#include "tokenizers/json_fields.h"
#include "tokenizers/models.h"
#include "tokenizers/pipeline.h"

namespace kiln::tokenizers {

/// The pipeline a tokenizer.json document describes (roles guessed from the token names);
/// errors through `f`.
std::shared_ptr<Tokenizer::Impl> PipelineFromJson(const io::Json& doc, const Fields& f);
/// The tokenizer.json text of a pipeline.
std::string PipelineToJson(const Tokenizer::Impl& m);

}  // namespace kiln::tokenizers

namespace kiln::tokenizers {

/// GPT-2's pipeline around a byte-level BPE model: ByteLevel pre-tokenizer (GPT-2's regex, no
/// prefix space), post-processor and decoder; `special` (if in the vocabulary) as a special
/// added token.
std::shared_ptr<Tokenizer::Impl> ByteLevelBpePipeline(const BpeSpec& spec, const std::string& special,
                                                      const Fields& f);

}  // namespace kiln::tokenizers

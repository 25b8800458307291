// `headlab compare` as a library call: models trained alike, side by side — held-out quality,
// parameters, forward time, KV cache per token, the head analyses (roles, confidence, key-query
// spectra) and the rank of the T×T attention logit matrices on held-out text, the measure of the
// low-rank bottleneck (Bhojanapalli et al. 2020: with key size d_k below the sequence length T, a
// head's logits QKᵀ have rank ≤ d_k, so it cannot express every T×T attention pattern).
#pragma once

#include "analysis/head_report.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace headlab::core {
struct Model;
}

namespace headlab::analysis {

struct CompareOptions {
  std::vector<std::string> data;          // held-out text: quality, forward time, logit ranks
  std::vector<std::string> analyze_data;  // head analyses (CoNLL-U for syntactic roles); empty = `data`
  int64_t seq_len = 128;                  // tokens a sequence (quality, timing, logit ranks)
  int64_t limit = 500;                    // sentences the head analyses read (0 = all)
  int timing_runs = 10;                   // forward passes timed (median), after two untimed ones
  int rank_sequences = 16;                // held-out sequences whose logit matrices are measured
  double rank_tolerance = 1e-4;           // numerical rank: singular values above tolerance · σ_1
  // Called as each model's stage starts ("quality", "timing", "logit ranks", "head analyses").
  std::function<void(const std::string& model, const std::string& stage)> progress;
};

struct ModelSummary {
  std::string folder, name, attention;  // attention: the variant as `headlab info` names it
  int key_size = 0, heads = 0, layers = 0;
  int64_t parameters = 0;
  int64_t kv_bytes_per_token = 0;  // the KV cache a generated token adds (an encoder's as if it decoded)
  double loss = 0, accuracy = 0;   // the model's own objective on the held-out text
  int64_t targets = 0;
  double forward_ms = 0;           // median of one forward pass over seq_len tokens
  int threads = 1;
  // Numerical rank of each head's T×T logit matrix (mixed logits for talking heads), over the
  // measured sequences and heads: mean and maximum, and the mean of log10(σ_k / σ_1) at k = 1 … T
  // (logit_decay[k − 1]; ratios below 1e-10 count as 1e-10): a cliff at k = d_k is the bottleneck.
  double logit_rank_mean = 0;
  int logit_rank_max = 0;
  // The rank a head's logits cannot exceed: min(T, the size its queries and keys meet in) — d_k,
  // the shared D̃_k of collaborative heads, h_k·d_k for talking heads (a mix over the key heads).
  int logit_rank_bound = 0;
  int64_t logit_sequence_length = 0;
  std::vector<double> logit_decay;
  HeadReport report;  // confidence, positional, rare, syntactic (CoNLL-U), spectra
  int positional_heads() const;
  int rare_heads() const;
  int syntactic_heads() const;
  double mean_confidence() const;
  double mean_key_query_rank90() const;  // mean over heads of the W_Q W_Kᵀ form's 90% energy rank
};

// Measures one model. Throws std::runtime_error (naming the model) for a model without a tokenizer,
// a sequence-to-sequence model, or held-out text too short for one sequence.
ModelSummary summarize_model(core::Model& model, const std::string& folder, const CompareOptions& options);

// Writes `out`/comparison.md, comparison.json and figures (quality against parameters; the logit
// matrices' singular values against k) as SVG and PNG. Returns the files written.
std::vector<std::string> write_comparison(const std::vector<ModelSummary>& models, const CompareOptions& options,
                                          const std::string& out);

}  // namespace headlab::analysis

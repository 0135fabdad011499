#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "model/float_engine.h"
#include "model/float_ops.h"
#include "unit/model/test_util.h"

namespace mpcache::model {
namespace {

using testing::TinyModel;

// A deliberately naive forward pass written straight from the Llama-2 definition (double
// accumulation, RoPE recomputed per pair, no shared helpers), to cross-check the engine.
class NaiveModel {
 public:
  explicit NaiveModel(const ModelWeights& w) : w_(w) {
    const auto& c = w.config;
    k_.assign(c.n_layers, {});
    v_.assign(c.n_layers, {});
  }
  std::vector<float> Forward(int token, int pos) {
    const auto& c = w_.config;
    const int d = c.dim, hs = c.head_size(), kvd = c.kv_dim();
    std::vector<double> x(d);
    for (int i = 0; i < d; ++i) x[i] = w_.token_embedding[static_cast<std::size_t>(token) * d + i];
    auto norm = [&](const std::vector<double>& in, const std::vector<float>& g) {
      double ss = 0;
      for (double t : in) ss += t * t;
      const double s = 1.0 / std::sqrt(ss / d + 1e-5);
      std::vector<double> o(in.size());
      for (std::size_t i = 0; i < in.size(); ++i) o[i] = g[i] * in[i] * s;
      return o;
    };
    auto mat = [](const std::vector<float>& m, const std::vector<double>& in, int rows) {
      const std::size_t n = in.size();
      std::vector<double> o(rows);
      for (int r = 0; r < rows; ++r) {
        double acc = 0;
        for (std::size_t j = 0; j < n; ++j) acc += m[r * n + j] * in[j];
        o[r] = acc;
      }
      return o;
    };
    auto rope = [&](std::vector<double>& v) {
      for (std::size_t i = 0; i < v.size(); i += 2) {
        const double angle = pos * std::pow(10000.0, -static_cast<double>(i % hs) / hs);
        const double a = v[i], b = v[i + 1];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + 1] = a * std::sin(angle) + b * std::cos(angle);
      }
    };
    for (int l = 0; l < c.n_layers; ++l) {
      const auto& L = w_.layers[l];
      auto xb = norm(x, L.rms_att);
      auto q = mat(L.wq, xb, d), k = mat(L.wk, xb, kvd), v = mat(L.wv, xb, kvd);
      rope(q);
      rope(k);
      k_[l].push_back(k);
      v_[l].push_back(v);
      std::vector<double> out(d, 0.0);
      for (int h = 0; h < c.n_heads; ++h) {
        const int kh = h / (c.n_heads / c.n_kv_heads);
        std::vector<double> s(pos + 1);
        double mx = -1e300;
        for (int t = 0; t <= pos; ++t) {
          double dot = 0;
          for (int i = 0; i < hs; ++i) dot += q[h * hs + i] * k_[l][t][kh * hs + i];
          s[t] = dot / std::sqrt(static_cast<double>(hs));
          mx = std::max(mx, s[t]);
        }
        double sum = 0;
        for (auto& e : s) sum += (e = std::exp(e - mx));
        for (int t = 0; t <= pos; ++t) {
          for (int i = 0; i < hs; ++i) out[h * hs + i] += s[t] / sum * v_[l][t][kh * hs + i];
        }
      }
      auto o = mat(L.wo, out, d);
      for (int i = 0; i < d; ++i) x[i] += o[i];
      xb = norm(x, L.rms_ffn);
      auto g = mat(L.w1, xb, c.hidden_dim), u = mat(L.w3, xb, c.hidden_dim);
      for (int i = 0; i < c.hidden_dim; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      auto f = mat(L.w2, g, d);
      for (int i = 0; i < d; ++i) x[i] += f[i];
    }
    auto xf = norm(x, w_.rms_final);
    const std::vector<float>& cls = c.shared_classifier ? w_.token_embedding : w_.wcls;
    auto logits = mat(cls, xf, c.vocab_size);
    return {logits.begin(), logits.end()};
  }

 private:
  const ModelWeights& w_;
  std::vector<std::vector<std::vector<double>>> k_, v_;
};

TEST(FloatEngineTest, MatchesNaiveReferenceWithGroupedQueryAttention) {
  for (bool shared : {true, false}) {
    const ModelWeights w = TinyModel(9, shared);  // 4 heads, 2 kv heads
    auto engine = FloatEngine::Create(w);
    ASSERT_TRUE(engine.ok()) << engine.error().ToString();
    NaiveModel naive(w);
    const int tokens[] = {1, 17, 260, 5, 299, 42, 42, 7};
    for (int pos = 0; pos < 8; ++pos) {
      auto logits = engine->Forward(tokens[pos], pos);
      ASSERT_TRUE(logits.ok()) << logits.error().ToString();
      const auto expect = naive.Forward(tokens[pos], pos);
      ASSERT_EQ(logits->size(), expect.size());
      for (std::size_t i = 0; i < expect.size(); ++i) {
        ASSERT_NEAR((*logits)[i], expect[i], 1e-3 * (1.0 + std::fabs(expect[i])))
            << "pos " << pos << " logit " << i;
      }
    }
  }
}

TEST(FloatEngineTest, RejectsBadPositionsAndTokens) {
  const ModelWeights w = TinyModel();
  auto engine = FloatEngine::Create(w);
  ASSERT_TRUE(engine.ok());
  auto r = engine->Forward(1, w.config.seq_len);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("context window"), std::string::npos);
  EXPECT_FALSE(engine->Forward(1, -1).ok());
  EXPECT_FALSE(engine->Forward(w.config.vocab_size, 0).ok());
  EXPECT_FALSE(engine->Forward(-3, 0).ok());
  auto small = FloatEngine::Create(w, FloatEngineOptions{4, false});
  ASSERT_TRUE(small.ok());
  // Positions come in order (the KV memory counts them): 1 before 0 is refused.
  auto early = small->Forward(1, 1);
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.error().message().find("out of order"), std::string::npos);
  for (int pos = 0; pos < 4; ++pos) EXPECT_TRUE(small->Forward(1, pos).ok()) << pos;
  EXPECT_FALSE(small->Forward(1, 4).ok());
  ModelWeights broken = TinyModel();
  broken.layers[0].wk.resize(3);
  EXPECT_FALSE(FloatEngine::Create(broken).ok());
}

TEST(FloatEngineTest, ThreadCountDoesNotChangeLogits) {
  // dim 256: the matrix products are large enough to be split across threads.
  const ModelWeights w = TinyModel(21, false, 256, 512, 2, 8, 4, 300, 8);
  auto one = FloatEngine::Create(w, FloatEngineOptions{0, false, 1});
  auto three = FloatEngine::Create(w, FloatEngineOptions{0, false, 3});
  ASSERT_TRUE(one.ok() && three.ok());
  for (int pos = 0; pos < 8; ++pos) {
    const int token = (pos * 37 + 5) % 300;
    auto a = one->Forward(token, pos);
    auto b = three->Forward(token, pos);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE(std::equal(a->begin(), a->end(), b->begin())) << "pos " << pos;
  }
  EXPECT_FALSE(FloatEngine::Create(w, FloatEngineOptions{0, false, 0}).ok());
}

TEST(FloatEngineTest, RecordsLayerOutputs) {
  const ModelWeights w = TinyModel();
  auto engine = FloatEngine::Create(w, FloatEngineOptions{0, true});
  ASSERT_TRUE(engine.ok());
  ASSERT_TRUE(engine->Forward(3, 0).ok());
  EXPECT_EQ(engine->LayerOutput(1).size(), 32u);
  EXPECT_TRUE(engine->LayerOutput(2).empty());
  EXPECT_EQ(engine->FinalNormed().size(), 32u);
}

TEST(FloatOpsTest, BuildingBlocks) {
  float x[3] = {1.0f, 2.0f, 3.0f};
  Softmax(x, 3);
  EXPECT_NEAR(x[0] + x[1] + x[2], 1.0f, 1e-6f);
  EXPECT_GT(x[2], x[1]);
  std::vector<float> a(19), b(19);
  for (int i = 0; i < 19; ++i) {
    a[i] = 0.5f * i;
    b[i] = 1.0f - 0.1f * i;
  }
  double ref = 0;
  for (int i = 0; i < 19; ++i) ref += static_cast<double>(a[i]) * b[i];
  EXPECT_NEAR(Dot(a.data(), b.data(), 19), ref, 1e-4);
  const float in[4] = {3.0f, 4.0f, 0.0f, 0.0f}, g[4] = {1.0f, 1.0f, 1.0f, 2.0f};
  float o[4];
  RmsNorm(o, in, g, 4, 0.0f);
  EXPECT_NEAR(o[0], 3.0f / std::sqrt(25.0f / 4.0f), 1e-6f);
}

}  // namespace
}  // namespace mpcache::model

// A computation graph in its smallest form: a function of two symbolic vectors (their Euclidean
// distance) compiled once per input shape for the backend and called on concrete values.
//
//   euclidean_distance [x1,x2,... y1,y2,...]   (default: 1,2 4,6 and 0,0 5,12)

#include <kiln/kiln.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::graph;

namespace {

/// sqrt(sum((x - y)^2)): only builds nodes; nothing is computed until the graph runs.
Node EuclideanDistance(Node x, Node y) { return Sqrt(ReduceAllSum(Square(x - y))); }

/// "1,2.5,-3" as floats; a malformed number is an Error naming it.
std::vector<float> ParseVector(const std::string& text) {
  std::vector<float> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    float v = 0;
    try {
      v = std::stof(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      throw Error("euclidean_distance: \"" + item + "\" in \"" + text + "\" is not a number");
    out.push_back(v);
  }
  return out;
}

std::string Join(const std::vector<float>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return "(" + os.str() + ")";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::vector<std::pair<std::vector<float>, std::vector<float>>> pairs;
    if (argc == 3) {
      pairs.emplace_back(ParseVector(argv[1]), ParseVector(argv[2]));
    } else if (argc == 1) {
      pairs = {{{1, 2}, {4, 6}}, {{0, 0}, {5, 12}}, {{1, 1, 1, 1}, {0, 0, 0, 0}}};
    } else {
      std::cerr << "usage: euclidean_distance [x1,x2,... y1,y2,...]\n";
      return 2;
    }
    compute::BackendPtr backend = compute::New();
    std::cout << "backend: " << backend->Description() << "\n";
    // One Exec: it compiles a graph the first time it sees each pair of input shapes, and reuses it.
    Exec distance = NewExec(backend, EuclideanDistance, "euclidean distance");
    for (const auto& [x, y] : pairs) {
      Tensor d = distance.Call1(x, y);
      std::cout << "distance " << Join(x) << " -> " << Join(y) << " = " << d.Item<float>() << "\n";
    }
  } catch (const Error& e) {
    std::cerr << e.message() << "\n";
    return 1;
  }
  return 0;
}

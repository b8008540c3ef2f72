// Built against an installed kiln by the install test.
#include <kiln/kiln.h>

#include <iostream>
#include <vector>

int main() {
  kiln::Tensor t = kiln::Tensor::FromValue(std::vector<std::vector<float>>{{1, 2}, {3, 4}});
  std::cout << "consumer: kiln " << kiln::Version() << " " << t << "\n";
  return 0;
}

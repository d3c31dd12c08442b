// dtensorc: the command-line driver (placeholder until the pipeline lands).
#include <cstdio>
int main() { std::puts("dtensorc"); return 0; }

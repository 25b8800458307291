// headlab: with a command, the CLI; without one, the workbench window.
#include "app/cli/cli.h"

int main(int argc, char** argv) { return headlab::app::cli_main(argc, argv, nullptr); }

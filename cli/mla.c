/* placeholder: cli written next */
#include <stdio.h>
int main(void) { puts("mla: not yet"); return 0; }

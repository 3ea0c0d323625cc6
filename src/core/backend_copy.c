/* gcsh_backend_copy_of: see backend.h. */
#include "core/backend.h"

#define COPY_TABLE(tab)                                                                            \
    do {                                                                                           \
        if (b->tab) {                                                                              \
            c->tab = *b->tab;                                                                      \
            c->be.tab = &c->tab;                                                                   \
        }                                                                                          \
    } while (0)

void gcsh_backend_copy_of(gcsh_backend_copy *c, const gcsh_backend *b)
{
    *c = (gcsh_backend_copy){.be = *b};
    COPY_TABLE(mem);
    COPY_TABLE(comm);
    COPY_TABLE(win);
    COPY_TABLE(kern);
    COPY_TABLE(xfer);
    COPY_TABLE(graph);
    COPY_TABLE(persist);
}

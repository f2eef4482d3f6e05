/* nets_factory.c - research/slim/nets/nets_factory.py: networks_map / arg_scopes_map
 * for the networks this port carries (mobilenet_v1 and its depth-multiplier variants,
 * resnet_v1_50 / 101 / 152 / 200) and get_network_fn. */
#include "slim_classifier.h"
#include <string.h>

typedef struct net_entry {
    const char *name;
    int kind;           /* 0 mobilenet_v1, 1 resnet_v1 */
    double depth_multiplier;
    int layers;
    int default_image_size;
} net_entry;

static const net_entry NETWORKS[] = {
    {"mobilenet_v1", 0, 1.0, 0, MOBILENET_V1_DEFAULT_IMAGE_SIZE},
    {"mobilenet_v1_075", 0, 0.75, 0, MOBILENET_V1_DEFAULT_IMAGE_SIZE},
    {"mobilenet_v1_050", 0, 0.50, 0, MOBILENET_V1_DEFAULT_IMAGE_SIZE},
    {"mobilenet_v1_025", 0, 0.25, 0, MOBILENET_V1_DEFAULT_IMAGE_SIZE},
    {"resnet_v1_50", 1, 0, 50, RESNET_V1_DEFAULT_IMAGE_SIZE},
    {"resnet_v1_101", 1, 0, 101, RESNET_V1_DEFAULT_IMAGE_SIZE},
    {"resnet_v1_152", 1, 0, 152, RESNET_V1_DEFAULT_IMAGE_SIZE},
    {"resnet_v1_200", 1, 0, 200, RESNET_V1_DEFAULT_IMAGE_SIZE},
};

static const net_entry *find(const char *name) {
    for (size_t i = 0; name && i < sizeof NETWORKS / sizeof NETWORKS[0]; i++)
        if (strcmp(NETWORKS[i].name, name) == 0) return &NETWORKS[i];
    return NULL;
}

vg_code nets_factory_get_network_fn(const char *name, int num_classes, double weight_decay, bool is_training,
                                    network_fn *out, vg_status *st) {
    const net_entry *e = find(name);
    if (!e)
        return vg_status_set(st, VG_INVALID_ARGUMENT,
                             "Name of network unknown %s (this port carries mobilenet_v1[_075|_050|_025] and "
                             "resnet_v1_50/101/152/200)",
                             name ? name : "(null)");
    *out = (network_fn){e->name, e->default_image_size, num_classes, weight_decay, is_training};
    return VG_OK;
}

vg_output network_fn_apply(vg_graph *g, const network_fn *fn, vg_output images, end_points *ep) {
    const net_entry *e = find(fn->name);
    if (!e) {
        vg_graph_set_error(g, VG_INVALID_ARGUMENT, "Name of network unknown %s", fn->name);
        return (vg_output){NULL, 0};
    }
    /* arg_scope = arg_scopes_map[name](weight_decay=weight_decay); with slim.arg_scope(arg_scope):
     *   return func(images, num_classes, is_training=is_training) */
    int depth0 = vg_slim_arg_scope_depth(g);
    vg_output logits;
    if (e->kind == 0) {
        mobilenet_v1_arg_scope(g, true, fn->weight_decay, 0.09, false);
        logits = mobilenet_v1(g, images, fn->num_classes, 0.999, fn->is_training, 8, e->depth_multiplier, ep);
    } else {
        resnet_arg_scope(g, fn->weight_decay, 0.997, 1e-5, true);
        logits = resnet_v1_n(g, e->layers, images, fn->num_classes, fn->is_training, ep);
    }
    vg_slim_arg_scope_pop_to(g, depth0);
    return logits;
}

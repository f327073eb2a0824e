#include "launchers.h"

float vec3_dot(vec3 a, vec3 b)
{
    return (a.x * b.x + a.y * b.y + a.z * b.z) * (float)(a.weight * b.weight);
}

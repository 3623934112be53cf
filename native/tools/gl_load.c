// OpenGL frames on the GPU with no display (EGL, NVIDIA's device platform): a stand-in for the
// window's drawing when asking what the GPU's other work does to cuda.mlp_resident and back
// (native/tools/resident_beside_gl.py runs it; findings in native/cuda/mlp/NOTES.md, 2026-11-29 night).
// Each frame clears a 1400x1000 pbuffer, draws `quads` full-screen quads with a small fragment
// shader, and waits for them (glFinish), then sleeps to the next 1/fps tick (fps 0: no sleep).
// Prints one line after `seconds`: frames, and frame time (draw + finish) median / p99 in ms.
// Build: cc -O2 -o /tmp/gl_load native/tools/gl_load.c -lEGL -lGLESv2
// Run:   /tmp/gl_load FPS QUADS SECONDS   (with the NVIDIA EGL vendor file on __EGL_VENDOR_LIBRARY_FILENAMES)
#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GLES3/gl3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmp(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}
static GLuint shader(GLenum kind, const char* src) {
    const GLuint s = glCreateShader(kind);
    glShaderSource(s, 1, &src, NULL);
    glCompileShader(s);
    return s;
}

int main(int argc, char** argv) {
    const double fps = argc > 1 ? atof(argv[1]) : 60.0, seconds = argc > 3 ? atof(argv[3]) : 5.0;
    const int quads = argc > 2 ? atoi(argv[2]) : 50;
    PFNEGLQUERYDEVICESEXTPROC query = (PFNEGLQUERYDEVICESEXTPROC)eglGetProcAddress("eglQueryDevicesEXT");
    PFNEGLGETPLATFORMDISPLAYEXTPROC platform =
        (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
    EGLDeviceEXT devs[4];
    EGLint n = 0;
    if (!query || !platform || !query(4, devs, &n) || n < 1) {
        fprintf(stderr, "gl_load: no EGL device\n");
        return 1;
    }
    EGLDisplay dpy = platform(EGL_PLATFORM_DEVICE_EXT, devs[0], NULL);
    if (!eglInitialize(dpy, NULL, NULL)) {
        fprintf(stderr, "gl_load: eglInitialize failed\n");
        return 1;
    }
    const EGLint cfg_attr[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT,
                               EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8, EGL_NONE};
    EGLConfig cfg;
    EGLint ncfg = 0;
    eglChooseConfig(dpy, cfg_attr, &cfg, 1, &ncfg);
    const EGLint pb_attr[] = {EGL_WIDTH, 1400, EGL_HEIGHT, 1000, EGL_NONE};
    EGLSurface surf = eglCreatePbufferSurface(dpy, cfg, pb_attr);
    eglBindAPI(EGL_OPENGL_ES_API);
    const EGLint ctx_attr[] = {EGL_CONTEXT_MAJOR_VERSION, 3, EGL_NONE};
    EGLContext ctx = eglCreateContext(dpy, cfg, EGL_NO_CONTEXT, ctx_attr);
    if (ncfg < 1 || surf == EGL_NO_SURFACE || ctx == EGL_NO_CONTEXT || !eglMakeCurrent(dpy, surf, surf, ctx)) {
        fprintf(stderr, "gl_load: no GLES 3 context on a pbuffer (0x%x)\n", eglGetError());
        return 1;
    }
    const GLuint prog = glCreateProgram();
    glAttachShader(prog, shader(GL_VERTEX_SHADER, "#version 300 es\nin vec2 p; void main() { gl_Position = vec4(p, 0.0, 1.0); }\n"));
    glAttachShader(prog, shader(GL_FRAGMENT_SHADER,
                                "#version 300 es\nprecision highp float; uniform float t; out vec4 c;\n"
                                "void main() { float v = sin(gl_FragCoord.x * 0.01 + t) * cos(gl_FragCoord.y * 0.01);\n"
                                "c = vec4(v, v * v, 0.5, 0.02); }\n"));
    glBindAttribLocation(prog, 0, "p");
    glLinkProgram(prog);
    glUseProgram(prog);
    const float quad[] = {-1, -1, 1, -1, -1, 1, 1, -1, 1, 1, -1, 1};
    GLuint vbo;
    glGenBuffers(1, &vbo);
    glBindBuffer(GL_ARRAY_BUFFER, vbo);
    glBufferData(GL_ARRAY_BUFFER, sizeof quad, quad, GL_STATIC_DRAW);
    glEnableVertexAttribArray(0);
    glVertexAttribPointer(0, 2, GL_FLOAT, GL_FALSE, 0, 0);
    glEnable(GL_BLEND);
    glBlendFunc(GL_SRC_ALPHA, GL_ONE_MINUS_SRC_ALPHA);
    const GLint t_loc = glGetUniformLocation(prog, "t");
    const int cap = (int)(seconds * (fps > 0 ? fps : 2000)) + 16;
    double* ft = malloc(sizeof(double) * cap);
    int frames = 0;
    const double t0 = now_s();
    double next = t0;
    printf("gl_load: %s, started\n", (const char*)glGetString(GL_RENDERER));
    fflush(stdout);
    while (now_s() - t0 < seconds && frames < cap) {
        const double a = now_s();
        glClear(GL_COLOR_BUFFER_BIT);
        for (int q = 0; q < quads; ++q) {
            glUniform1f(t_loc, (float)(frames + q));
            glDrawArrays(GL_TRIANGLES, 0, 6);
        }
        glFinish();
        ft[frames++] = (now_s() - a) * 1e3;
        if (fps > 0) {
            next += 1.0 / fps;
            const double wait = next - now_s();
            if (wait > 0) {
                struct timespec w = {(time_t)wait, (long)((wait - (time_t)wait) * 1e9)};
                nanosleep(&w, NULL);
            }
        }
    }
    qsort(ft, frames, sizeof(double), cmp);
    printf("gl_load: %d frames in %.1f s, frame %.3f ms median, %.3f ms p99\n", frames, now_s() - t0, ft[frames / 2],
           ft[frames * 99 / 100]);
    return 0;
}

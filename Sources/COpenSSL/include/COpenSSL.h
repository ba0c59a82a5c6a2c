#ifndef COPENSSL_H
#define COPENSSL_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/evp.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/bio.h>

/// Function-like macros of OpenSSL that Swift cannot import, as real functions.
static inline long COpenSSL_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}

static inline long COpenSSL_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

/// SpinNet's server options: no renegotiation (a DoS vector and a TLS 1.2-only
/// feature), no compression (CRIME), the server's cipher order.
static inline uint64_t COpenSSL_SSL_CTX_set_server_options(SSL_CTX *ctx) {
    return SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION
                                    | SSL_OP_CIPHER_SERVER_PREFERENCE);
}

/// SSL_MODE_RELEASE_BUFFERS: idle connections give their record buffers back.
static inline long COpenSSL_SSL_CTX_set_release_buffers(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
}

/// Bytes waiting in a memory BIO (BIO_pending is a macro).
static inline long COpenSSL_BIO_pending(BIO *bio) {
    return BIO_pending(bio);
}

/// The reason part of a packed OpenSSL error code (ERR_GET_REASON).
static inline int COpenSSL_ERR_GET_REASON(unsigned long code) {
    return ERR_GET_REASON(code);
}

/// SNI on a client session (SSL_set_tlsext_host_name is a macro); used by tests
/// and by any client-side code.
static inline long COpenSSL_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static int COpenSSL_no_password(char *buf, int size, int rwflag, void *userdata) {
    (void)buf; (void)size; (void)rwflag; (void)userdata;
    return 0;
}

/// Reads a PEM private key without ever prompting on the terminal for a passphrase
/// (the default callback would); an encrypted key fails like an unreadable one.
static inline EVP_PKEY *COpenSSL_read_private_key_file(const char *path) {
    BIO *bio = BIO_new_file(path, "r");
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, COpenSSL_no_password, NULL);
    BIO_free(bio);
    return key;
}

#endif

public enum SpinCoreModule {}

/* ops.cu — placeholder until the order-independent GPU operations land. */
